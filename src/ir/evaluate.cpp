#include "ir/evaluate.h"

#include <functional>

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
  return apply_binary(e.kind(), evaluate_int(b->a, bindings), evaluate_int(b->b, bindings));
}

IntProgram::IntProgram(const Expr& e, const std::vector<Var>& vars) {
  // Postfix order; a select's condition comes last so that its operands are below it.
  std::function<void(const Expr&, int)> emit = [&](const Expr& x, int depth) {
    DC_INTERNAL_CHECK(depth < kMaxDepth, "expression too deep to compile: {}", to_string(e));
    if (const int64_t* c = as_const_int(x)) {
      ops_.push_back({ExprKind::IntImm, *c});
      return;
    }
    if (const auto* v = x.as<VarNode>()) {
      for (size_t i = 0; i < vars.size(); ++i)
        if (vars[i].get() == v) {
          ops_.push_back({ExprKind::Var, static_cast<int64_t>(i)});
          return;
        }
      internal_error(__FILE__, __LINE__, "unbound variable " + v->name);
    }
    if (const auto* s = x.as<SelectNode>()) {
      emit(s->true_value, depth + 1);
      emit(s->false_value, depth + 1);
      emit(s->condition, depth + 1);
      ops_.push_back({ExprKind::Select, 0});
      return;
    }
    const BinaryNode* b = as_binary(x);
    DC_INTERNAL_CHECK(b, "cannot evaluate {}", to_string(x));
    emit(b->a, depth + 1);
    emit(b->b, depth + 1);
    ops_.push_back({x.kind(), 0});
  };
  emit(e, 0);
  monomial_ = true;
  for (const Op& op : ops_) {
    if (op.kind == ExprKind::IntImm) {
      coefficient_ *= op.value;
    } else if (op.kind == ExprKind::Var && factor_count_ < kMaxFactors) {
      factors_[factor_count_++] = static_cast<int>(op.value);
    } else if (op.kind != ExprKind::Mul) {
      monomial_ = false;
      break;
    }
  }
}

int64_t IntProgram::operator()(const int64_t* values) const {
  if (monomial_) {
    int64_t product = coefficient_;
    for (int i = 0; i < factor_count_; ++i) product *= values[factors_[i]];
    return product;
  }
  int64_t stack[2 * kMaxDepth + 2];  // each level holds at most two pending values
  int top = 0;
  for (const Op& op : ops_) {
    switch (op.kind) {
      case ExprKind::IntImm:
        stack[top++] = op.value;
        break;
      case ExprKind::Var:
        stack[top++] = values[op.value];
        break;
      case ExprKind::Select:
        top -= 2;
        stack[top - 1] = stack[top + 1] ? stack[top - 1] : stack[top];
        break;
      default:
        --top;
        stack[top - 1] = apply_binary(op.kind, stack[top - 1], stack[top]);
    }
  }
  return stack[0];
}

}  // namespace dietcode::ir
