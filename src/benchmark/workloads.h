// Named benchmark workloads: the operators of record (../shared/DIETCODE.md) at a
// sequence length T, each with the GEMM view its peers compute.
//
//   bert-dense      the four BERT-base dense layers (N, K) = (2304, 768) (768, 768)
//                   (3072, 768) (768, 3072), M = T (batch 1)
//   bert-dense-2304x768  the first of them alone (the tuning benchmark's layer)
//   bert-attention  batch_matmul over 12 heads, head size 64: Q K^T ([T,64] x [64,T])
//                   and S V ([T,T] x [T,64]); then the fused operator
//                   O = softmax(Q K^T / 8) V (ops/attention.h, batch 1, no mask), whose
//                   peer is a composition of peers (Q K^T, oneDNN's softmax, S V)
//   bert-elementwise  the row operators between them: LayerNorm and add + LayerNorm on
//                   T x 768, softmax over 12 x T rows of T, GELU (erf form) on T x 3072
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "benchmark/peer_api.h"
#include "ops/spec.h"
#include "te/tensor.h"

namespace dietcode::bench {

struct WorkloadLayer {
  std::string name;  // e.g. "bert-dense-2304x768", "bert-attention-qk-b12"
  te::Operator op;   // one shape variable, T
  // The problem at sequence length t, as the peers see it.
  GemmProblem problem(int64_t t) const;
  // A row operator instead of a product: row_batch * T rows of row_n (0: T) columns.
  bool is_row = false;
  RowOpKind row_kind = RowOpKind::LayerNorm;
  int64_t row_batch = 1, row_n = 0;
  RowProblem row_problem(int64_t t) const;
  // Fused attention (ops/attention.h) over `batch` heads of `k` (the head size), no mask:
  // its peer is the composition of qk_problem, a softmax RowProblem over batch * T rows of
  // T, and sv_problem.
  bool is_attention = false;
  // Ours reads Q, K, V from one [T, 3 x batch x k] input (a QKV projection's output, the
  // model's layout: ops::attention_packed_qkv of one sequence) and writes [T, batch x k];
  // the peers' composition computes from separate [batch, T, k] copies of the same values
  // (made outside the timing) into [batch, T, k].
  bool packed_qkv = false;
  GemmProblem qk_problem(int64_t t) const { return GemmProblem{batch, t, t, k, true, false}; }
  GemmProblem sv_problem(int64_t t) const { return GemmProblem{batch, t, k, t, false, false}; }
  // 4 T^2 D per head: the multiply-adds of Q K^T and of S V.
  double attention_flops(int64_t t) const { return 4.0 * double(batch) * double(t * t * k); }
  // A dense layer with a fused epilogue (ops/dense.h: bias+gelu or bias+residual): its
  // peer is the composition of problem(t) and this pass over the product's T rows of n
  // (the peers' fastest GEMM, then oneDNN's binary add with post-ops).
  std::optional<RowOpKind> epilogue_pass;
  RowProblem epilogue_problem(int64_t t) const {
    return RowProblem{*epilogue_pass, batch * t, n, 1e-5};
  }
  bool t_in_m = true, t_in_n = false, t_in_k = false;
  int64_t batch = 1, m = 0, n = 0, k = 0;  // fixed dims (0 where T stands)
  bool b_layout_nk = true, b_shared = true;
};

struct Workload {
  std::string name;
  std::vector<WorkloadLayer> layers;
};

// The layer that computes a tuned module's operator (M = T). Throws dietcode::Error for
// an operator the peers cannot compute (an epilogue other than bias+gelu, bias+residual).
WorkloadLayer layer_for_operator(const std::string& name, const ops::OperatorSpec& spec);
// True if the layer computes the same problem as the operator at every T.
bool layer_computes(const WorkloadLayer& layer, const ops::OperatorSpec& spec);

// Throws dietcode::Error for an unknown name, listing the known ones.
Workload make_workload(const std::string& name, int64_t t_max);
std::vector<std::string> workload_names();

inline double gemm_flops(const GemmProblem& p) {
  return 2.0 * p.batch * p.m * p.n * p.k;
}

}  // namespace dietcode::bench
