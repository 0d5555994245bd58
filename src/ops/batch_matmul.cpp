#include "ops/batch_matmul.h"

#include "support/error.h"

namespace dietcode::ops {

Layout parse_layout(const std::string& text) {
  if (text == "NN") return Layout::NN;
  if (text == "NT") return Layout::NT;
  user_error("unknown layout '{}'; expected NN or NT", text);
}

const char* to_string(Layout l) {
  return l == Layout::NN ? "NN" : "NT";
}

te::Operator batch_matmul(std::vector<te::ShapeVar> shape_vars, ir::Expr batch, ir::Expr M,
                          ir::Expr N, ir::Expr K, Layout layout) {
  for (const ir::Expr* d : {&batch, &M, &N, &K}) {
    const int64_t* c = ir::as_const_int(*d);
    if (c && *c < 1)
      user_error("batch_matmul: dimension {} is not positive; extents must be >= 1", *c);
  }
  te::Input a = te::input("A", {batch, M, K});
  te::Input b =
      layout == Layout::NN ? te::input("B", {batch, K, N}) : te::input("B", {batch, N, K});
  te::ComputeOp c =
      te::compute("C", {batch, M, N}, {"b", "m", "n"}, [&](const std::vector<ir::Var>& ax) {
        ir::Var k("k");
        ir::Expr rhs = layout == Layout::NN ? ir::load(b.tensor, {ax[0], k, ax[2]})
                                            : ir::load(b.tensor, {ax[0], ax[2], k});
        return ir::reduce_sum(k, K, ir::load(a.tensor, {ax[0], ax[1], k}) * rhs);
      });
  return te::Operator{std::string("batch_matmul_") + to_string(layout),
                      std::move(shape_vars),
                      {a, b},
                      std::move(c),
                      {}};
}

}  // namespace dietcode::ops
