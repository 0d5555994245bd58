#include "lower/insert_packing.h"

#include <vector>

#include "ir/visit.h"

namespace dietcode::lower {

using namespace ir;

namespace {

Stmt expand(const PackStageNode& p) {
  Var panel("p"), lane("lane"), kk("kk_i");
  Expr width = p.width;
  Expr row = p.row_begin + Var(panel) * width + Var(lane);
  Expr safe_row = min(row, p.row_limit - 1);
  VarMap at{{p.row.get(), safe_row}, {p.k.get(), p.k_begin + Var(kk)}};
  std::vector<Expr> index;
  for (const Expr& i : p.source_index) index.push_back(substitute(i, at));
  Expr value = select(row < p.row_limit, load(p.source, index), make_float(0.0));
  Expr dest = p.panel_offset + Var(panel) * p.k_extent * width + Var(kk) * width + Var(lane);
  Stmt store = make_store(p.panel, {dest}, value);
  // Read the source along its contiguous dimension.
  Stmt inner = p.k_contiguous ? make_for(lane, 0, width, ForKind::Serial,
                                         make_for(kk, 0, p.k_extent, ForKind::Serial, store))
                              : make_for(kk, 0, p.k_extent, ForKind::Serial,
                                         make_for(lane, 0, width, ForKind::Serial, store));
  return make_for(panel, 0, ceil_div(p.row_extent, width), ForKind::Serial, inner);
}

void collect_panels(const Stmt& s, std::vector<Buffer>& panels) {
  visit_stmts(s, [&](const Stmt& x) {
    if (const auto* p = x.as<PackStageNode>()) {
      for (const Buffer& b : panels)
        if (b == p->panel) return;
      panels.push_back(p->panel);
    }
  });
}

Stmt allocate_all(const std::vector<Buffer>& panels, Stmt body) {
  for (const Buffer& b : panels) body = make_allocate(b, std::move(body));
  return body;
}

// Expands pack stages; wraps the body of a parallel loop in the allocations of the
// panels packed inside it.
Stmt lower_in_scope(const Stmt& s) {
  if (const auto* p = s.as<PackStageNode>()) return packs_by_transposing(*p) ? s : expand(*p);
  if (const auto* f = s.as<ForNode>(); f && f->for_kind == ForKind::Parallel) {
    std::vector<Buffer> panels;
    collect_panels(f->body, panels);
    return make_for(f->var, f->min, f->extent, f->for_kind,
                    allocate_all(panels, lower_in_scope(f->body)));
  }
  return map_stmt(s, lower_in_scope, [](const Expr& e) { return e; });
}

void collect_panels_outside_parallel(const Stmt& s, std::vector<Buffer>& panels) {
  if (const auto* f = s.as<ForNode>(); f && f->for_kind == ForKind::Parallel) return;
  if (s.as<PackStageNode>()) collect_panels(s, panels);
  for (const Stmt& c : stmt_children(s)) collect_panels_outside_parallel(c, panels);
}

}  // namespace

bool packs_by_transposing(const PackStageNode& p) {
  return p.k_contiguous && p.width % 8 == 0;
}

Stmt expand_pack_stages(const Stmt& s) {
  return lower_in_scope(s);
}

Stmt insert_packing(const Stmt& s) {
  std::vector<Buffer> shared_panels;
  collect_panels_outside_parallel(s, shared_panels);
  return allocate_all(shared_panels, lower_in_scope(s));
}

}  // namespace dietcode::lower
