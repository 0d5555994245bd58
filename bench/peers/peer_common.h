// Small helpers the peer plugins share. Header-only, because each plugin is its own shared
// object and must not depend on anything but its vendor library and peer_api.h.
#pragma once

#include <chrono>
#include <climits>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "benchmark/peer_api.h"

namespace dietcode::bench::peers {

// A shared B lets the whole batch fold into the M dimension of one GEMM: A and C are
// contiguous [batch*m, k] and [batch*m, n].
inline int64_t gemm_rows(const GemmProblem& p) {
  return p.b_shared ? p.batch * p.m : p.m;
}
inline int64_t gemm_count(const GemmProblem& p) {
  return p.b_shared ? 1 : p.batch;
}

inline void check_problem(const GemmProblem& p) {
  if (p.batch < 1 || p.m < 1 || p.n < 1 || p.k < 1)
    throw std::runtime_error("GEMM problem with a non-positive dimension");
}

// Empty if every GEMM dimension fits the library's 32-bit integer type.
inline std::string int32_limit(const GemmProblem& p) {
  if (gemm_rows(p) > INT_MAX || p.n > INT_MAX || p.k > INT_MAX ||
      p.n * p.k > INT_MAX)  // leading dimensions and offsets too
    return "a dimension exceeds the library's 32-bit integer";
  return "";
}

inline std::string layout_label(bool nk) {
  return nk ? "B[n,k]" : "B[k,n]";
}

// Row-major [rows, cols] to row-major [cols, rows].
inline std::vector<float> transposed(const float* src, int64_t rows, int64_t cols) {
  std::vector<float> dst(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
  return dst;
}

class Stopwatch {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// The variants of a BLAS-style peer: B as given and, for constant (shared) B, a
// transposed copy made once in prepare (the library packs the two layouts differently,
// so either may win); each also as gemv when there is a single row. `gemm` and `gemv`
// make the timed call from (problem, a, b, b_layout_nk, c, keep_alive).
template <typename Gemm, typename Gemv>
std::vector<PeerVariant> blas_layout_variants(const GemmProblem& p, const float* a, const float* b,
                                              float* c, Gemm gemm, Gemv gemv) {
  check_problem(p);
  std::vector<PeerVariant> variants;
  auto add = [&](const float* bb, bool nk, const std::string& suffix,
                 const std::shared_ptr<const void>& keep, double setup) {
    const std::string label = layout_label(nk) + suffix;
    variants.push_back({label, gemm(p, a, bb, nk, c, keep), setup});
    if (gemm_rows(p) == 1)
      variants.push_back({label + " gemv", gemv(p, a, bb, nk, c, keep), setup});
  };
  add(b, p.b_layout_nk, "", {}, 0);
  if (p.b_shared) {  // a B that changes per call (attention) may not be copied ahead
    Stopwatch watch;
    auto copy = std::make_shared<std::vector<float>>(p.b_layout_nk ? transposed(b, p.n, p.k)
                                                                   : transposed(b, p.k, p.n));
    add(copy->data(), !p.b_layout_nk, " copy", copy, watch.seconds());
  }
  return variants;
}

}  // namespace dietcode::bench::peers

// The one symbol a plugin exports (the build hides everything else).
#define DIETCODE_DEFINE_PEER_ENTRY(PeerType)                                    \
  static_assert(std::string_view(DIETCODE_PEER_ENTRY) == "dietcode_make_peer"); \
  extern "C" __attribute__((visibility("default"))) ::dietcode::bench::Peer*    \
  dietcode_make_peer() {                                                        \
    return new PeerType();                                                      \
  }
