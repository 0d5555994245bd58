// Recognizes a row operator: the form of elementwise operators, LayerNorm and softmax.
// The output's last axis is the row (length L, symbolic or constant); its leading axes
// enumerate the rows. Per row:
//
//   s_1 = f_1( reduce_{j < L} e_1(x[.., j], ...) )          zero or more row stages
//   s_2 = f_2( reduce_{j < L} e_2(x[.., j], s_1, ...), s_1 )  (sum or max; each may read
//   ...                                                        the stages before it)
//   out[.., j] = g(x[.., j], s_1, s_2, ...)                    elementwise over the row
//
// Every tensor read is either contiguous along the row (its last index is the row
// axis, no other index mentions it) or constant along it (a broadcast). Stages read
// earlier stages at the same row. Declared with te::row_stage (see te/tensor.h).
#pragma once

#include <vector>

#include "te/tensor.h"

namespace dietcode::ops {

struct RowReduction {
  ir::Buffer result;  // the stage, read by later stages and the output as result[rows...]
  ir::ReduceOp op;    // sum or max
  ir::Var axis;       // the reduction's axis, running along the row
  ir::Expr element;   // the reduced expression, in the row axes and `axis`
  ir::Expr reduce;    // the Reduce node itself, inside `value`
  ir::Expr value;     // the stage's value per row: elementwise in `reduce` and earlier stages
};

struct RowOp {
  std::vector<ir::Var> row_axes;  // the output's leading axes (empty: a single row)
  std::vector<ir::Expr> row_extents;
  ir::Var col;                           // the output's last axis
  ir::Expr length;                       // L
  std::vector<RowReduction> reductions;  // in evaluation order
  ir::Buffer output;
  ir::Expr value;  // the output element, in the row axes and `col`
};

// Throws dietcode::Error naming what does not fit the form.
RowOp match_row_op(const te::Operator& op);

}  // namespace dietcode::ops
