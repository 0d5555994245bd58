// Recognizes the contraction inside an operator's compute definition, the form
// every CPU micro-kernel schedule applies to:
//
//   out[batch..., m, n] = act( sum_k A(batch, m, k) * B(batch, n, k) + bias(n) )
//
// A is the operand indexed by m (the broadcast side of the register tile), B the
// one indexed by n (the vector side). Index expressions are kept as written, so
// any contraction (dense, batch_matmul, conv2d as implicit GEMM) lowers the same way.
#pragma once

#include "ir/stmt.h"
#include "te/tensor.h"

namespace dietcode::ops {

struct ContractionOperand {
  ir::Buffer tensor;
  std::vector<ir::Expr> index;  // in terms of the axes below
  bool constant = false;
};

struct Contraction {
  std::vector<ir::Var> batch_axes;
  std::vector<ir::Expr> batch_extents;
  ir::Var m, n, k;
  ir::Expr m_extent, n_extent, k_extent;
  ContractionOperand a, b;
  ir::Buffer output;  // indexed [batch..., m, n] in output axis order
  std::vector<ir::Var> output_axes;
  ContractionOperand bias;  // tensor undefined if no bias
  ir::Activation activation = ir::Activation::None;
  int b_input_index = -1;  // which operator input B is (for pre-packing)
};

// Throws dietcode::Error naming what does not fit the form.
Contraction match_contraction(const te::Operator& op);

}  // namespace dietcode::ops
