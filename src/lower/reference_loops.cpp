#include "lower/reference_loops.h"

namespace dietcode::lower {

namespace {

ir::Stmt compute_loops(const te::ComputeOp& c) {
  std::vector<ir::Expr> index(c.axes.begin(), c.axes.end());
  ir::Stmt body = ir::make_store(c.output, index, c.body);
  for (size_t i = c.axes.size(); i-- > 0;)
    body = ir::make_for(c.axes[i], 0, c.output.shape()[i], ir::ForKind::Serial, body);
  return body;
}

}  // namespace

ir::Stmt reference_loops(const te::Operator& op) {
  std::vector<ir::Stmt> stmts;
  for (const te::ComputeOp& stage : op.stages) stmts.push_back(compute_loops(stage));
  stmts.push_back(compute_loops(op.compute));
  return ir::make_block(std::move(stmts));
}

}  // namespace dietcode::lower
