// A contraction that is not in the operator library, declared the way a user would:
// a 1-D convolution as an implicit GEMM. Its A access, X[m + k / C, k % C], is not
// affine, so it exercises packing through arbitrary index expressions and the
// validator's refusal of direct (unpacked) A.
#pragma once

#include "te/tensor.h"

namespace dietcode::testing {

// out[l, f] = sum_{r < R, c < C} X[l + r, c] * W[f, r*C + c], l < L (symbolic).
inline te::Operator conv1d(int64_t l_min, int64_t l_max, int64_t C, int64_t R, int64_t F) {
  te::ShapeVar L = te::shape_var("L", l_min, l_max);
  ir::Expr l = L.var;
  te::Input x = te::input("X", {l + (R - 1), ir::Expr(C)});
  te::Input w = te::input("W", {ir::Expr(F), ir::Expr(R * C)}, /*constant=*/true);
  te::ComputeOp out =
      te::compute("out", {l, ir::Expr(F)}, {"l", "f"}, [&](const std::vector<ir::Var>& ax) {
        ir::Var k("k");
        return ir::reduce_sum(
            k, R * C,
            ir::load(x.tensor, {ir::Expr(ax[0]) + ir::Expr(k) / C, ir::Expr(k) % C}) *
                ir::load(w.tensor, {ax[1], k}));
      });
  return te::Operator{"conv1d", {L}, {x, w}, out, {}};
}

}  // namespace dietcode::testing
