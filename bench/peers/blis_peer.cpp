// The BLIS peer: the typed API (bli_sgemm, and bli_sgemv for a single row) with general
// strides, and BLIS's own threading. Only bli_* symbols are called: a BLAS-named one
// (cblas_sgemm, sgemm_) could bind to another BLAS that the harness or an earlier plugin
// brought into the global scope.
#include <blis.h>

#include <memory>
#include <string>
#include <vector>

#include "peer_common.h"

namespace dietcode::bench::peers {
namespace {

// BLIS takes non-const pointers for its inputs but writes only C.
float* mutable_input(const float* x) {
  return const_cast<float*>(x);
}

// C = A op(B) for every batch entry, B stored [n,k] if `nk`; `keep` owns `b` if a copy.
std::function<void()> gemm(const GemmProblem& p, const float* a, const float* b, bool nk, float* c,
                           std::shared_ptr<const void> keep) {
  const dim_t rows = gemm_rows(p), n = p.n, k = p.k, count = gemm_count(p);
  // B as the k x n operand: element (l, j) lives at j*k + l when stored [n,k].
  const inc_t rs_b = nk ? 1 : n, cs_b = nk ? k : 1;
  return [=, a = mutable_input(a), b = mutable_input(b), keep = std::move(keep)] {
    float one = 1.0f, zero = 0.0f;
    for (dim_t i = 0; i < count; ++i)
      bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, rows, n, k, &one, a + i * rows * k, k, 1,
                b + i * n * k, rs_b, cs_b, &zero, c + i * rows * n, n, 1);
  };
}

// The same for one row of A, as y (n) = B (n x k) x. BLIS runs level-2 on one thread.
std::function<void()> gemv(const GemmProblem& p, const float* a, const float* b, bool nk, float* c,
                           std::shared_ptr<const void> keep) {
  const dim_t n = p.n, k = p.k, count = gemm_count(p);
  const inc_t rs_b = nk ? k : 1, cs_b = nk ? 1 : n;
  return [=, a = mutable_input(a), b = mutable_input(b), keep = std::move(keep)] {
    float one = 1.0f, zero = 0.0f;
    for (dim_t i = 0; i < count; ++i)
      bli_sgemv(BLIS_NO_TRANSPOSE, BLIS_NO_CONJUGATE, n, k, &one, b + i * n * k, rs_b, cs_b,
                a + i * k, 1, &zero, c + i * n, 1);
  };
}

class BlisPeer final : public Peer {
 public:
  std::string name() const override { return "blis"; }
  std::string version() const override {
    return std::string("BLIS ") + bli_info_get_version_str() + " (" +
           bli_arch_string(bli_arch_query_id()) + ", " +
           (bli_info_get_enable_openmp()     ? "OpenMP"
            : bli_info_get_enable_pthreads() ? "pthreads"
                                             : "single-threaded") +
           ")";
  }
  void set_threads(int threads) override { bli_thread_set_num_threads(threads); }
  std::string unsupported(const GemmProblem&) const override { return ""; }

  std::vector<PeerVariant> prepare(const GemmProblem& p, const float* a, const float* b,
                                   float* c) override {
    return blas_layout_variants(p, a, b, c, gemm, gemv);
  }
};

}  // namespace
}  // namespace dietcode::bench::peers

DIETCODE_DEFINE_PEER_ENTRY(dietcode::bench::peers::BlisPeer)
