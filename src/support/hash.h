// FNV-1a, 64 bits: stable digests of text (records files) and of typed values
// (schedules). The same input gives the same digest on every run and machine. Not
// cryptographic.
#pragma once

#include <cstdint>
#include <string_view>

namespace dietcode {

class Fnv1a {
 public:
  void add(std::string_view bytes) {
    for (unsigned char c : bytes) h_ = (h_ ^ c) * 1099511628211ULL;
  }
  // The eight bytes of v, least significant first (the same on every host).
  void add(int64_t v) {
    for (int i = 0; i < 8; ++i) h_ = (h_ ^ ((uint64_t(v) >> (8 * i)) & 0xff)) * 1099511628211ULL;
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 1469598103934665603ULL;
};

inline uint64_t fnv1a64(std::string_view text) {
  Fnv1a h;
  h.add(text);
  return h.value();
}

}  // namespace dietcode
