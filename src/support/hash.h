// FNV-1a, 64 bits: a stable digest of text (schedules, records files). Not cryptographic.
#pragma once

#include <cstdint>
#include <string_view>

namespace dietcode {

inline uint64_t fnv1a64(std::string_view text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace dietcode
