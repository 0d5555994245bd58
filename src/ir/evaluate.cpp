#include "ir/evaluate.h"

#include "ir/printer.h"
#include "support/error.h"

namespace dietcode::ir {

int64_t evaluate_int(const Expr& e, const Bindings& bindings) {
  if (const int64_t* c = as_const_int(e)) return *c;
  if (const auto* v = e.as<VarNode>()) {
    auto it = bindings.find(v);
    DC_INTERNAL_CHECK(it != bindings.end(), "unbound variable {}", v->name);
    return it->second;
  }
  if (const auto* s = e.as<SelectNode>())
    return evaluate_int(s->condition, bindings) ? evaluate_int(s->true_value, bindings)
                                                : evaluate_int(s->false_value, bindings);
  const BinaryNode* b = as_binary(e);
  DC_INTERNAL_CHECK(b, "cannot evaluate {}", to_string(e));
  int64_t x = evaluate_int(b->a, bindings);
  int64_t y = evaluate_int(b->b, bindings);
  switch (e.kind()) {
    case ExprKind::Add:
      return x + y;
    case ExprKind::Sub:
      return x - y;
    case ExprKind::Mul:
      return x * y;
    case ExprKind::Div:
    case ExprKind::Mod:
      DC_INTERNAL_CHECK(y != 0, "division by zero in {}", to_string(e));
      return e.kind() == ExprKind::Div ? floor_div(x, y) : floor_mod(x, y);
    case ExprKind::Min:
      return std::min(x, y);
    case ExprKind::Max:
      return std::max(x, y);
    case ExprKind::LT:
      return x < y;
    case ExprKind::LE:
      return x <= y;
    case ExprKind::EQ:
      return x == y;
    case ExprKind::And:
      return x && y;
    default:
      break;
  }
  internal_error(__FILE__, __LINE__, "cannot evaluate " + to_string(e));
}

}  // namespace dietcode::ir
