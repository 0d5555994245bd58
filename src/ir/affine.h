// Affine analysis of index expressions: e == constant + sum_i coefficient[i] * var[i],
// where the constant and the coefficients do not mention any of the vars. Used to
// find strides of tensor accesses (whether an operand can be read in place, which
// loop order copies it contiguously).
#pragma once

#include <optional>
#include <vector>

#include "ir/expr.h"

namespace dietcode::ir {

struct AffineForm {
  Expr constant;
  std::vector<Expr> coefficients;  // one per var, in the order given
};

// Returns nullopt if `e` is not affine in `vars` (e.g. i*j, i/2, i % 4).
std::optional<AffineForm> affine_form(const Expr& e, const std::vector<Var>& vars);

}  // namespace dietcode::ir
