// Algebraic simplification of index arithmetic beyond the constant folding that
// the constructors already do: re-association of constants, exact division of
// scaled terms, and statements made trivial by constants (one-iteration loops,
// constant conditions).
#pragma once

#include "ir/expr.h"
#include "ir/stmt.h"

namespace dietcode::ir {

Expr simplify(const Expr& e);
Stmt simplify(const Stmt& s);

}  // namespace dietcode::ir
