#include "lower/reference_loops.h"

namespace dietcode::lower {

ir::Stmt reference_loops(const te::Operator& op) {
  const te::ComputeOp& c = op.compute;
  std::vector<ir::Expr> index(c.axes.begin(), c.axes.end());
  ir::Stmt body = ir::make_store(c.output, index, c.body);
  for (size_t i = c.axes.size(); i-- > 0;)
    body = ir::make_for(c.axes[i], 0, c.output.shape()[i], ir::ForKind::Serial, body);
  return body;
}

}  // namespace dietcode::lower
