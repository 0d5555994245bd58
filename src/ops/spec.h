// An operator as data: what tuning records and module files store so that the
// operator can be rebuilt exactly (te::Operator itself is an expression graph).
//
//   dense          Y[M, N] = act(X[M, K] W[N, K]^T + bias[N]),  M symbolic
//   batch_matmul   C[b, M, N] = A[b, M, K] B[b, ...] (layout NN or NT),  M symbolic, and
//                  N or K may be M too (attention's products, T on both sides)
//   row operators  over X[M, N] (ops/row_ops.h): add (two [M, N] inputs), gelu,
//                  gelu_tanh, softmax, layer_norm, add_layer_norm (`eps`, default 1e-5);
//                  K unused
//   attention      fused softmax(Q K^T / sqrt(K) [+ mask]) V (ops/attention.h) over `batch`
//                  sequences of N heads of size K, sequence length T = M; `mask` adds a
//                  [batch, T] additive mask input; `packed_qkv`: the layout of
//                  ops::attention_packed_qkv (QKV [batch, T, 3 N K] in, [batch, T, N K] out)
//
// M is the one shape variable, declared over [m_min, m_max] with optional weighted
// instances (the shapes a workload sees, and how often).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "te/tensor.h"

namespace dietcode::ops {

struct OperatorSpec {
  std::string op = "dense";  // "dense" or "batch_matmul"
  int64_t n = 64, k = 64;
  int64_t batch = 1;          // batch_matmul only
  std::string layout = "NT";  // batch_matmul only
  // batch_matmul only: N (or K) is the shape variable M too, as T on both sides of
  // attention's Q K^T (N = T) and S V (K = T); JSON "N": "M". `n` (`k`) is then unused.
  bool n_is_m = false, k_is_m = false;
  std::string epilogue = "none";  // dense only
  bool mask = false;              // attention only
  bool packed_qkv = false;        // attention only
  double eps = 1e-5;              // layer_norm, add_layer_norm only
  int64_t m_min = 1, m_max = 1;
  std::vector<te::WeightedInstance> instances;  // empty: every M in range, weight 1

  // Throws dietcode::Error naming the field that is wrong.
  te::Operator build() const;
  // The shapes the operator is tuned for (instances, or every M in range) and their weights.
  std::vector<std::vector<int64_t>> declared_shapes() const;
  std::vector<double> declared_weights() const;
  // "dense N=2304 K=768 M=1..128 epilogue=none"
  std::string describe() const;
  bool operator==(const OperatorSpec& o) const;
};

// True for the names of the row operators above (compiled under a RowSchedule).
bool is_row_operator(const std::string& op);

nlohmann::json to_json(const OperatorSpec& s);
// Throws dietcode::Error naming the missing or invalid field.
OperatorSpec operator_spec_from_json(const nlohmann::json& j);

}  // namespace dietcode::ops
