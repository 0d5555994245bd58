#include "lower/mark_parallel.h"

namespace dietcode::lower {

using namespace ir;

Stmt mark_parallel(const Stmt& s, const Var& loop_var) {
  if (!loop_var.defined()) return s;
  if (const auto* f = s.as<ForNode>(); f && f->var == loop_var)
    return make_for(f->var, f->min, f->extent, ForKind::Parallel, f->body);
  return map_stmt(
      s, [&](const Stmt& c) { return mark_parallel(c, loop_var); },
      [](const Expr& e) { return e; });
}

}  // namespace dietcode::lower
