#include "lower/mark_parallel.h"

#include <algorithm>

namespace dietcode::lower {

using namespace ir;

namespace {

Stmt mark(const Stmt& s, const Var& loop_var) {
  if (const auto* f = s.as<ForNode>(); f && f->var == loop_var)
    return make_for(f->var, f->min, f->extent, ForKind::Parallel, f->body);
  return map_stmt(
      s, [&](const Stmt& c) { return mark(c, loop_var); }, [](const Expr& e) { return e; });
}

// `for b: parallel for v: body`, b a batch axis (its iterations write disjoint outputs)
// and v's range independent of b, becomes one parallel loop over both:
// `parallel for task in [0, B x V): let b, v = ...; body`.
// A batched product over T <= mc then has 12 tasks, not 12 loops of one task each
// (each a call into the thread pool, and no second thread ever busy).
Stmt fuse_batch_loops(const Stmt& s, const std::vector<Var>& batch_axes) {
  auto recurse = [&](const Stmt& c) { return fuse_batch_loops(c, batch_axes); };
  const auto* outer = s.as<ForNode>();
  if (!outer) return map_stmt(s, recurse, [](const Expr& e) { return e; });
  Stmt body = recurse(outer->body);
  const auto* inner = body.as<ForNode>();
  bool batch = std::find(batch_axes.begin(), batch_axes.end(), outer->var) != batch_axes.end();
  bool fusable = batch && outer->for_kind == ForKind::Serial && inner &&
                 inner->for_kind == ForKind::Parallel && !uses_var(inner->min, outer->var.get()) &&
                 !uses_var(inner->extent, outer->var.get());
  if (!fusable) return make_for(outer->var, outer->min, outer->extent, outer->for_kind, body);
  Var task(outer->var.name() + "_" + inner->var.name());
  Expr v_extent = inner->extent;
  Stmt fused = make_let(outer->var, outer->min + task / v_extent,
                        make_let(inner->var, inner->min + task % v_extent, inner->body));
  return make_for(task, 0, outer->extent * v_extent, ForKind::Parallel, fused);
}

}  // namespace

Stmt mark_parallel(const Stmt& s, const Var& loop_var, const std::vector<Var>& batch_axes) {
  if (!loop_var.defined()) return s;
  return fuse_batch_loops(mark(s, loop_var), batch_axes);
}

}  // namespace dietcode::lower
