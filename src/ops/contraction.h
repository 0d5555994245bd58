// Recognizes the contraction inside an operator's compute definition, the form
// every CPU micro-kernel schedule applies to:
//
//   out[batch..., m, n] = epilogue( sum_k A(batch, m, k) * B(batch, n, k), inputs... )
//
// A is the operand indexed by m (the broadcast side of the register tile), B the
// one indexed by n (the vector side). The epilogue is any elementwise float expression
// of the sum and of reads of other inputs at the output's element, row or column
// (bias(n), residual(m, n), scale(m), activations); it runs on the register tile. Index expressions
// are kept as written, so any contraction (dense, batch_matmul, conv2d as implicit GEMM) lowers the
// same way.
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
  // out = epilogue, an expression of `product` (the sum) and of each epilogue input's
  // `value` (its element at the output position); undefined when out is the sum itself.
  ir::Var product;
  ir::Expr epilogue;
  struct EpilogueInput {
    ContractionOperand operand;  // indexed by output axes only, unit stride along n or none
    ir::Var value;
  };
  std::vector<EpilogueInput> epilogue_inputs;
  int b_input_index = -1;  // which operator input B is (for pre-packing)
};

// Throws dietcode::Error naming what does not fit the form.
Contraction match_contraction(const te::Operator& op);

}  // namespace dietcode::ops
