// The LIBXSMM peer: JIT-generated kernels (libxsmm_smmdispatch), one call per batch entry
// and column block, the blocks spread over threads with OpenMP.
//
// LIBXSMM is column-major. Row-major C[m,n] = A[m,k] B[k,n] is, read column-major, the
// product C^T (n x m) = B^T (n x k) A^T (k x m), each transpose being the same memory. So the
// kernel is M' = n, N' = m, K' = k with A' = B (ld n), B' = A (ld k), C' = C (ld n), and no
// transposes. A B stored [n,k] would need A' transposed, which 1.17's JIT does not generate:
// constant weights are transposed once ahead; a B that changes per call is transposed in
// every call (libxsmm_otrans), as a user of LIBXSMM would have to.
#include <libxsmm.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "peer_common.h"

namespace dietcode::bench::peers {
namespace {

// Column blocks are whole vectors (but the last) so that splitting N costs no efficiency.
constexpr int64_t kColumnQuantum = 16;

struct Plan {
  int64_t count = 1, rows = 1, n = 1, k = 1;
  int64_t block = 1, blocks = 1;  // N is cut into `blocks` column blocks (the last narrower)
  int threads = 1;
  libxsmm_smmfunction full = nullptr, last = nullptr;
  const float* a = nullptr;
  const float* b = nullptr;  // [k, n] per batch entry, or [n, k] when transposed per call
  float* b_kn = nullptr;     // where a per-call transpose goes
  float* c = nullptr;
  std::shared_ptr<std::vector<float>> b_copy;  // owns b (constant weights) or b_kn

  void run_item(int64_t item) const {
    const int64_t i = item / blocks, col = item % blocks * block;
    const float* bi = b + i * n * k;
    if (b_kn) {
      // Column block [col, col + width) of B^T is row block [col, col + width) of B.
      const int64_t width = std::min(block, n - col);
      libxsmm_otrans(b_kn + i * n * k + col, bi + col * k, sizeof(float), k, width, k, n);
      bi = b_kn + i * n * k;
    }
    (col + block < n ? full : last)(bi + col, a + i * rows * k, c + i * rows * n + col);
  }

  void run() const {
    const int64_t items = count * blocks;
    if (threads == 1 || items == 1) {
      for (int64_t item = 0; item < items; ++item) run_item(item);
      return;
    }
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t item = 0; item < items; ++item) run_item(item);
  }
};

libxsmm_smmfunction dispatch(int64_t cols, const Plan& plan) {
  const libxsmm_blasint m = cols, n = plan.rows, k = plan.k, lda = plan.n, ldb = k, ldc = plan.n;
  const float alpha = 1, beta = 0;
  const int flags = LIBXSMM_GEMM_FLAG_NONE, prefetch = LIBXSMM_GEMM_PREFETCH_NONE;
  return libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, &prefetch);
}

// The kernels for `p` on `threads` threads; `why` says what failed when a kernel is null.
Plan make_plan(const GemmProblem& p, int threads, std::string* why) {
  Plan plan;
  plan.count = gemm_count(p);
  plan.rows = gemm_rows(p);
  plan.n = p.n;
  plan.k = p.k;
  plan.threads = threads;
  // Enough column blocks that every thread has work even for a single GEMM.
  const int64_t wanted = std::clamp<int64_t>((threads + plan.count - 1) / plan.count, 1,
                                             (p.n + kColumnQuantum - 1) / kColumnQuantum);
  plan.block = std::min(
      p.n, ((p.n + wanted - 1) / wanted + kColumnQuantum - 1) / kColumnQuantum * kColumnQuantum);
  plan.blocks = (p.n + plan.block - 1) / plan.block;
  const int64_t last_width = p.n - (plan.blocks - 1) * plan.block;
  plan.full = dispatch(plan.block, plan);
  plan.last = dispatch(last_width, plan);
  if (!plan.full || !plan.last)
    *why = "libxsmm_smmdispatch generated no kernel for M'=" +
           std::to_string(plan.full ? last_width : plan.block) +
           " N'=" + std::to_string(plan.rows) + " K'=" + std::to_string(p.k);
  return plan;
}

class LibxsmmPeer final : public Peer {
 public:
  LibxsmmPeer() { libxsmm_init(); }
  std::string name() const override { return "libxsmm"; }
  std::string version() const override {
    return std::string("LIBXSMM ") + LIBXSMM_CONFIG_VERSION + " (" + libxsmm_get_target_arch() +
           "; JIT kernels, threads split batch and N with OpenMP)";
  }
  void set_threads(int threads) override { threads_ = std::max(threads, 1); }

  std::string unsupported(const GemmProblem& p) const override {
    std::string why = int32_limit(p);
    if (why.empty()) make_plan(p, threads_, &why);  // kernels are cached for prepare
    return why;
  }

  std::vector<PeerVariant> prepare(const GemmProblem& p, const float* a, const float* b,
                                   float* c) override {
    check_problem(p);
    Stopwatch watch;
    std::string why = int32_limit(p);
    Plan plan = why.empty() ? make_plan(p, threads_, &why) : Plan{};
    if (!why.empty()) throw std::runtime_error("libxsmm: " + why);
    plan.a = a;
    plan.b = b;
    plan.c = c;
    std::string label = "B[k,n]";
    if (p.b_layout_nk && p.b_shared) {
      plan.b_copy = std::make_shared<std::vector<float>>(transposed(b, p.n, p.k));
      plan.b = plan.b_copy->data();
      label = "B[k,n] copy";
    } else if (p.b_layout_nk) {
      plan.b_copy = std::make_shared<std::vector<float>>(p.batch * p.n * p.k);
      plan.b_kn = plan.b_copy->data();
      label = "B[n,k] transposed per call";
    }
    return {{label, [plan] { plan.run(); }, watch.seconds()}};
  }

 private:
  int threads_ = 1;
};

}  // namespace
}  // namespace dietcode::bench::peers

DIETCODE_DEFINE_PEER_ENTRY(dietcode::bench::peers::LibxsmmPeer)
