#include "ir/visit.h"

#include "support/error.h"

namespace dietcode::ir {

std::vector<Expr> children(const Expr& e) {
  if (const BinaryNode* b = as_binary(e)) return {b->a, b->b};
  switch (e.kind()) {
    case ExprKind::Select: {
      const auto* s = e.as<SelectNode>();
      return {s->condition, s->true_value, s->false_value};
    }
    case ExprKind::Load:
      return e.as<LoadNode>()->indices;
    case ExprKind::Call:
      return e.as<CallNode>()->args;
    case ExprKind::Reduce: {
      const auto* r = e.as<ReduceNode>();
      return {r->extent, r->body};
    }
    default:
      return {};
  }
}

Expr with_children(const Expr& e, const std::vector<Expr>& c) {
  std::vector<Expr> old = children(e);
  DC_INTERNAL_CHECK(old.size() == c.size(), "with_children arity");
  bool same = true;
  for (size_t i = 0; i < c.size(); ++i) same = same && old[i].same_as(c[i]);
  if (same) return e;
  if (as_binary(e)) return make_binary(e.kind(), c[0], c[1]);
  switch (e.kind()) {
    case ExprKind::Select:
      return select(c[0], c[1], c[2]);
    case ExprKind::Load:
      return load(e.as<LoadNode>()->buffer, c);
    case ExprKind::Call:
      return call(e.as<CallNode>()->op, c);
    case ExprKind::Reduce:
      return reduce(e.as<ReduceNode>()->op, e.as<ReduceNode>()->axis, c[0], c[1]);
    default:
      internal_error(__FILE__, __LINE__, "leaf with children");
  }
}

void visit_exprs(const Expr& e, const std::function<void(const Expr&)>& fn) {
  fn(e);
  for (const Expr& c : children(e)) visit_exprs(c, fn);
}

Expr rewrite_bottom_up(const Expr& e, const std::function<Expr(const Expr&)>& rewrite) {
  std::vector<Expr> kids = children(e);
  for (Expr& k : kids) k = rewrite_bottom_up(k, rewrite);
  Expr rebuilt = kids.empty() ? e : with_children(e, kids);
  Expr replaced = rewrite(rebuilt);
  return replaced.defined() ? replaced : rebuilt;
}

Expr substitute(const Expr& e, const VarMap& replacements) {
  if (replacements.empty()) return e;
  return rewrite_bottom_up(e, [&](const Expr& x) -> Expr {
    if (x.kind() != ExprKind::Var) return Expr();
    auto it = replacements.find(static_cast<const VarNode*>(x.get()));
    return it == replacements.end() ? Expr() : it->second;
  });
}

}  // namespace dietcode::ir
