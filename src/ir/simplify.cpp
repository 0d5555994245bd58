#include "ir/simplify.h"

#include "ir/visit.h"

namespace dietcode::ir {

namespace {

// One rewrite at the root of an already-simplified node; undefined if none applies.
Expr simplify_root(const Expr& e) {
  const BinaryNode* b = as_binary(e);
  if (!b || e.type() != Type::Int) return Expr();
  const int64_t* cb = as_const_int(b->b);
  const BinaryNode* inner = as_binary(b->a);
  const int64_t* inner_c = inner ? as_const_int(inner->b) : nullptr;
  if (cb && inner_c) {
    // (x + c1) + c2 -> x + (c1 + c2); (x + c1) - c2 -> x + (c1 - c2)
    if (inner->kind == ExprKind::Add && e.kind() == ExprKind::Add)
      return inner->a + (*inner_c + *cb);
    if (inner->kind == ExprKind::Add && e.kind() == ExprKind::Sub)
      return inner->a + (*inner_c - *cb);
    // (x * c1) * c2 -> x * (c1 * c2)
    if (inner->kind == ExprKind::Mul && e.kind() == ExprKind::Mul)
      return inner->a * (*inner_c * *cb);
    // (x * c1) / c2 -> x * (c1 / c2) when c2 divides c1
    if (inner->kind == ExprKind::Mul && e.kind() == ExprKind::Div && *cb > 0 && *inner_c % *cb == 0)
      return inner->a * (*inner_c / *cb);
  }
  return Expr();
}

}  // namespace

Expr simplify(const Expr& e) {
  if (!e.defined()) return e;
  return rewrite_bottom_up(e, simplify_root);
}

Stmt simplify(const Stmt& s) {
  Stmt out = map_stmt(
      s, [](const Stmt& c) { return simplify(c); }, [](const Expr& e) { return simplify(e); });
  if (const auto* f = out.as<ForNode>()) {
    if (is_const(f->extent, 0)) return make_block({});
    if (is_const(f->extent, 1) && f->for_kind == ForKind::Serial)
      return make_let(f->var, f->min, f->body);
  }
  return out;
}

}  // namespace dietcode::ir
