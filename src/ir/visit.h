// Generic traversal and rewriting of expressions. Every node kind is handled in
// exactly two places (children() and with_children()), so adding a kind does not
// touch every pass.
#pragma once

#include <functional>
#include <unordered_map>
#include <vector>

#include "ir/expr.h"

namespace dietcode::ir {

// The operands of a node, in a fixed order (empty for leaves).
std::vector<Expr> children(const Expr& e);

// A copy of `e` with its operands replaced (same order as children()); returns `e`
// itself when nothing changed.
Expr with_children(const Expr& e, const std::vector<Expr>& new_children);

// Calls `fn` on `e` and on every sub-expression, parents before children.
void visit_exprs(const Expr& e, const std::function<void(const Expr&)>& fn);

// Rewrites children first, then offers the rebuilt node to `rewrite`, which returns
// a replacement or an undefined Expr to keep it.
Expr rewrite_bottom_up(const Expr& e, const std::function<Expr(const Expr&)>& rewrite);

using VarMap = std::unordered_map<const VarNode*, Expr>;

// Replaces variables by expressions.
Expr substitute(const Expr& e, const VarMap& replacements);

}  // namespace dietcode::ir
