// The row operator library: elementwise work, LayerNorm and softmax declared as tensor
// expressions (row stages + an elementwise output; see ops/row_op.h), compiled under a
// schedule::RowSchedule by the same pipeline as contractions. No hand-written kernels.
//
// Shapes are lists of dimensions, each a positive constant or kM: the operator's one
// shape variable M, declared over [m_min, m_max]. The last dimension is the row.
//
//   add(a, b)             Y = A + B with NumPy broadcasting (right-aligned; 1 stretches)
//   gelu(x), gelu_tanh(x) Y = gelu(X), erf form (codegen/llvm/activation.h) or tanh form
//   softmax(x)            Y = exp(X - max_row X) / sum_row exp(X - max_row X)
//   layer_norm(x)         Y = (X - mean) / sqrt(var + eps) * gamma + beta over rows of N,
//                         var = mean((X - mean)^2) (two passes: no cancellation)
//   add_layer_norm(x, r)  layer_norm(X + R): BERT's residual, the sum never stored
#pragma once

#include <cstdint>
#include <vector>

#include "te/tensor.h"

namespace dietcode::ops {

// The symbolic dimension M in a shape list.
constexpr int64_t kM = -1;

// Each throws dietcode::Error naming the input and what was expected: an empty range,
// a dimension neither positive nor kM, shapes that do not broadcast, eps <= 0.
te::Operator add(int64_t m_min, int64_t m_max, const std::vector<int64_t>& a_shape,
                 const std::vector<int64_t>& b_shape);
te::Operator gelu(int64_t m_min, int64_t m_max, const std::vector<int64_t>& shape);
te::Operator gelu_tanh(int64_t m_min, int64_t m_max, const std::vector<int64_t>& shape);
te::Operator softmax(int64_t m_min, int64_t m_max, const std::vector<int64_t>& shape);
// x[M, n], gamma[n], beta[n] (constant).
te::Operator layer_norm(int64_t m_min, int64_t m_max, int64_t n, double eps = 1e-5);
// x[M, n], residual[M, n], gamma[n], beta[n].
te::Operator add_layer_norm(int64_t m_min, int64_t m_max, int64_t n, double eps = 1e-5);

}  // namespace dietcode::ops
