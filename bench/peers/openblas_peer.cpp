// The OpenBLAS peer: cblas_sgemm (and cblas_sgemv for a single row), row-major, with
// OpenBLAS's own thread pool.
#include <cblas.h>

#include <memory>
#include <string>
#include <vector>

#include "peer_common.h"

namespace dietcode::bench::peers {
namespace {

// C = A op(B) for every batch entry, B stored [n,k] if `nk`; `keep` owns `b` if a copy.
std::function<void()> gemm(const GemmProblem& p, const float* a, const float* b, bool nk, float* c,
                           std::shared_ptr<const void> keep) {
  const int rows = static_cast<int>(gemm_rows(p)), n = static_cast<int>(p.n),
            k = static_cast<int>(p.k);
  const int64_t count = gemm_count(p);
  return [=, keep = std::move(keep)] {
    for (int64_t i = 0; i < count; ++i)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, nk ? CblasTrans : CblasNoTrans, rows, n, k, 1.0f,
                  a + i * rows * k, k, b + i * n * k, nk ? k : n, 0.0f, c + i * rows * n, n);
  };
}

// The same for one row of A: OpenBLAS 0.3.21's sgemm packs all of B even then.
std::function<void()> gemv(const GemmProblem& p, const float* a, const float* b, bool nk, float* c,
                           std::shared_ptr<const void> keep) {
  const int n = static_cast<int>(p.n), k = static_cast<int>(p.k);
  const int64_t count = gemm_count(p);
  return [=, keep = std::move(keep)] {
    for (int64_t i = 0; i < count; ++i)
      cblas_sgemv(CblasRowMajor, nk ? CblasNoTrans : CblasTrans, nk ? n : k, nk ? k : n, 1.0f,
                  b + i * n * k, nk ? k : n, a + i * k, 1, 0.0f, c + i * n, 1);
  };
}

class OpenBlasPeer final : public Peer {
 public:
  std::string name() const override { return "openblas"; }
  std::string version() const override {
    return std::string(openblas_get_config()) + " (core " + openblas_get_corename() + ")";
  }
  void set_threads(int threads) override { openblas_set_num_threads(threads); }
  // OpenBLAS's pthread workers spin for up to 2^28 cycles (its THREAD_TIMEOUT default,
  // ~0.07 s at 3.7 GHz) before they sleep.
  double idle_spin_seconds() const override { return 0.1; }
  std::string unsupported(const GemmProblem& p) const override { return int32_limit(p); }

  std::vector<PeerVariant> prepare(const GemmProblem& p, const float* a, const float* b,
                                   float* c) override {
    return blas_layout_variants(p, a, b, c, gemm, gemv);
  }
};

}  // namespace
}  // namespace dietcode::bench::peers

DIETCODE_DEFINE_PEER_ENTRY(dietcode::bench::peers::OpenBlasPeer)
