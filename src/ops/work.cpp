#include "ops/work.h"

#include <optional>

#include "ir/evaluate.h"
#include "ops/attention.h"
#include "ops/contraction.h"
#include "ops/row_op.h"
#include "support/error.h"

namespace dietcode::ops {

Work work_of(const te::Operator& op, const std::vector<int64_t>& shape) {
  ir::Bindings b = op.bind(shape);
  if (is_attention(op)) {
    AttentionOp a = match_attention(op);
    double t = double(ir::evaluate_int(a.t, b));
    return {4.0 * double(a.slices) * t * t * double(a.head_dim), "GFLOP/s"};
  }
  std::optional<Contraction> c;
  try {
    c = match_contraction(op);
  } catch (const Error&) {
    (void)match_row_op(op);  // throws for what is not a row operator either
    double bytes = 0;
    for (int64_t s : op.buffer_sizes(b)) bytes += 4.0 * double(s);
    return {bytes, "GB/s"};
  }
  double flops = 2.0 * double(ir::evaluate_int(c->m_extent, b)) *
                 double(ir::evaluate_int(c->n_extent, b)) *
                 double(ir::evaluate_int(c->k_extent, b));
  for (const ir::Expr& e : c->batch_extents) flops *= double(ir::evaluate_int(e, b));
  return {flops, "GFLOP/s"};
}

}  // namespace dietcode::ops
