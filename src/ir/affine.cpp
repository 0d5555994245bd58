#include "ir/affine.h"

namespace dietcode::ir {

namespace {

bool mentions_any(const Expr& e, const std::vector<Var>& vars) {
  for (const Var& v : vars)
    if (uses_var(e, v.get())) return true;
  return false;
}

AffineForm combine(const AffineForm& x, const AffineForm& y, bool subtract) {
  AffineForm r{subtract ? x.constant - y.constant : x.constant + y.constant, {}};
  for (size_t i = 0; i < x.coefficients.size(); ++i)
    r.coefficients.push_back(subtract ? x.coefficients[i] - y.coefficients[i]
                                      : x.coefficients[i] + y.coefficients[i]);
  return r;
}

AffineForm scale(const AffineForm& x, const Expr& factor) {
  AffineForm r{x.constant * factor, {}};
  for (const Expr& c : x.coefficients) r.coefficients.push_back(c * factor);
  return r;
}

}  // namespace

std::optional<AffineForm> affine_form(const Expr& e, const std::vector<Var>& vars) {
  if (!mentions_any(e, vars)) return AffineForm{e, std::vector<Expr>(vars.size(), Expr(0))};
  if (e.kind() == ExprKind::Var) {
    AffineForm r{0, std::vector<Expr>(vars.size(), Expr(0))};
    for (size_t i = 0; i < vars.size(); ++i)
      if (vars[i].get() == e.get()) r.coefficients[i] = 1;
    return r;
  }
  const BinaryNode* b = as_binary(e);
  if (!b) return std::nullopt;
  if (e.kind() == ExprKind::Add || e.kind() == ExprKind::Sub) {
    auto x = affine_form(b->a, vars), y = affine_form(b->b, vars);
    if (!x || !y) return std::nullopt;
    return combine(*x, *y, e.kind() == ExprKind::Sub);
  }
  if (e.kind() == ExprKind::Mul) {
    if (!mentions_any(b->b, vars)) {
      auto x = affine_form(b->a, vars);
      return x ? std::optional(scale(*x, b->b)) : std::nullopt;
    }
    if (!mentions_any(b->a, vars)) {
      auto y = affine_form(b->b, vars);
      return y ? std::optional(scale(*y, b->a)) : std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace dietcode::ir
