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
  return apply_binary(e.kind(), evaluate_int(b->a, bindings), evaluate_int(b->b, bindings));
}

}  // namespace dietcode::ir
