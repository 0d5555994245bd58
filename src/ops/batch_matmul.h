// batch_matmul: C[b, M, N] = sum_k A[b, M, K] * B[b, ., .] with B laid out
// [b, K, N] (NN) or [b, N, K] (NT, as in attention's Q K^T).
#pragma once

#include <string>

#include "te/tensor.h"

namespace dietcode::ops {

enum class Layout { NN, NT };
Layout parse_layout(const std::string& text);  // "NN" or "NT"
const char* to_string(Layout l);

te::Operator batch_matmul(std::vector<te::ShapeVar> shape_vars, ir::Expr batch, ir::Expr M,
                          ir::Expr N, ir::Expr K, Layout layout);

}  // namespace dietcode::ops
