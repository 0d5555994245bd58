// The plugin interface of the vendor libraries that `dietcode bench` measures beside
// generated kernels: what a peer plugin (bench/peers/) implements and the harness calls.
//
// Each peer is a small plugin (libdietcode_peer_NAME.so) linked against its library and
// loaded with dlopen at run time, so a library missing on the machine is reported by name
// and the benchmark still runs the others.
//
// Dense products (GemmProblem) are every peer's; row operators (RowProblem) are an
// optional entry point that a plugin may leave out.
//
// A peer gets its best honest use: it may prepare several variants of one problem
// (weight layouts, primitives), each with its own setup done outside the timing; the
// harness times every variant and keeps the fastest.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dietcode::bench {

// C[b] = A[b] * op(B[b]) for b < batch, all row-major float32:
//   A[b] is [m, k] (lda = k), C[b] is [m, n] (ldc = n),
//   B[b] is [n, k] when b_layout_nk (dense weights, attention's K), else [k, n].
// When b_shared, one B serves every batch entry (dense weights).
struct GemmProblem {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool b_layout_nk = true;
  bool b_shared = true;
};

// Row operators (BERT's elementwise work), row-major float32, `rows` rows of `n`:
//   LayerNorm     y = (x - mean) / sqrt(var + eps) * gamma + beta   inputs x, gamma[n], beta[n]
//   AddLayerNorm  LayerNorm(x + residual)                            x, residual, gamma, beta
//   Softmax       y = exp(x - max) / sum(exp(x - max)) along each row    x
//   Gelu          y = 0.5 x (1 + erf(x / sqrt 2))                        x
//   Bias          y = x + bias[n]                                        x, bias[n]
//   BiasGelu      y = gelu(x + bias[n])                                  x, bias[n]
//   BiasResidual  y = x + bias[n] + residual                            x, bias[n], residual
// var is the biased variance (mean of squared deviations). Bias, BiasGelu and BiasResidual
// are a dense layer's epilogue as a pass of its own over the product (the peers'
// composition that a fused epilogue is measured against).
enum class RowOpKind { LayerNorm, AddLayerNorm, Softmax, Gelu, Bias, BiasGelu, BiasResidual };
struct RowProblem {
  RowOpKind op = RowOpKind::LayerNorm;
  int64_t rows = 1, n = 1;
  double eps = 1e-5;
};

struct PeerVariant {
  std::string label;          // e.g. "matmul", "inner_product", "B[k,n]"
  std::function<void()> run;  // computes C from A and B; safe to call repeatedly
  double setup_seconds = 0;   // primitive creation, weight reorders, ... (not timed)
};

class Peer {
 public:
  virtual ~Peer() = default;
  virtual std::string name() const = 0;  // "openblas", "onednn", "blis", "libxsmm"
  virtual std::string version() const = 0;
  // Uses `threads` threads for every later call (the library's own thread control).
  virtual void set_threads(int threads) = 0;
  // Empty if the peer can compute `p`, else why not (e.g. LIBXSMM and a transposed operand).
  virtual std::string unsupported(const GemmProblem& p) const = 0;
  // How long the library's worker threads keep spinning after a call. With several
  // threads the harness waits this long after the peer's burst, so that its spinning
  // threads do not take cores from the implementation measured next.
  virtual double idle_spin_seconds() const { return 0.01; }  // libgomp's default spin, with margin
  // Variants computing `p` on these buffers (a: batch*m*k, b: (b_shared ? 1 : batch)*n*k,
  // c: batch*m*n). The buffers outlive the variants. Throws std::runtime_error on failure.
  virtual std::vector<PeerVariant> prepare(const GemmProblem& p, const float* a, const float* b,
                                           float* c) = 0;

  // Row operators are optional: a peer that does not override these has none, and the
  // harness skips it there with this line, as it skips a missing library.
  virtual std::string row_unsupported(const RowProblem&) const {
    return "no row operators in this plugin";
  }
  // Variants computing `p` from `inputs` (in the order above; they outlive the variants)
  // into `out` (rows * n). Throws std::runtime_error on failure.
  virtual std::vector<PeerVariant> prepare_row(const RowProblem& p,
                                               const std::vector<const float*>& inputs,
                                               float* out) {
    (void)p, (void)inputs, (void)out;
    return {};
  }

  // A dense layer with its epilogue fused into the product (oneDNN's post-ops), where the
  // library has that: c = epilogue(a * op(b)) for a plain dense problem (batch 1, shared
  // B), `epilogue` Bias, BiasGelu or BiasResidual with `inputs` its operands after the product
  // (bias, then the residual). Optional: none by default.
  virtual std::vector<PeerVariant> prepare_fused(const GemmProblem& p, RowOpKind epilogue,
                                                 const float* a, const float* b,
                                                 const std::vector<const float*>& inputs,
                                                 float* c) {
    (void)p, (void)epilogue, (void)a, (void)b, (void)inputs, (void)c;
    return {};
  }
};

// Each plugin exports this symbol.
extern "C" using MakePeerFn = Peer * (*)();
#define DIETCODE_PEER_ENTRY "dietcode_make_peer"

}  // namespace dietcode::bench
