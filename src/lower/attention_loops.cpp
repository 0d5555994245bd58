#include "lower/attention_loops.h"

#include "ir/printer.h"
#include "ir/simplify.h"
#include "lower/pipeline.h"
#include "lower/reference_loops.h"

namespace dietcode::lower {

using namespace ir;
using schedule::AttentionParallel;

Stmt build_attention_loops(const ops::AttentionOp& a, const schedule::AttentionSchedule& s) {
  Expr T = a.t, qt = s.query_tile;
  Expr tiles = ceil_div(T, qt);
  auto kernel = [&](const Expr& slice, const Expr& tile) {
    AttentionKernelNode k;
    k.vector_width = schedule::vector_isa(s.isa).width;
    k.query_tile = s.query_tile;
    k.key_block = s.key_block;
    k.unroll = s.unroll;
    k.head_dim = a.head_dim;
    k.scale = a.scale;
    k.q = a.q;
    k.k = a.k;
    k.v = a.v;
    k.mask = a.mask;
    k.output = a.output;
    k.length = T;
    k.k_offset = a.input_offset(1, slice);
    k.v_offset = a.input_offset(2, slice);
    k.output_offset = a.output_offset(slice);
    k.input_row_stride = a.input_row_stride();
    k.output_row_stride = a.output_row_stride();
    k.mask_offset = a.mask.defined() ? (slice / Expr(a.heads)) * T : Expr(0);
    k.row_begin = tile * qt;
    k.rows = min(qt, T - tile * qt);
    if (s.lanes == schedule::AttentionLanes::HeadDim) {
      k.head_dim_lanes = true;
      k.q_offset = a.input_offset(0, slice);
      return make_attention_kernel(std::move(k));
    }
    // Q^T of the tile: one zero-padded panel as wide as the tile's vectors of rows.
    const int64_t lanes = s.row_vectors() * k.vector_width;
    k.q_panel = Buffer("Q_tile", {Expr(lanes * a.head_dim)});
    PackStageNode p;
    p.panel = k.q_panel;
    p.panel_offset = 0;
    p.width = lanes;
    p.source = a.q;
    p.row = Var("qi");
    p.k = Var("qd");
    p.source_index = a.q_index(slice, p.row, p.k);
    p.row_begin = k.row_begin;
    p.row_extent = k.rows;
    p.row_limit = T;
    p.k_begin = 0;
    p.k_extent = Expr(a.head_dim);
    p.k_contiguous = true;
    k.pack_q = make_pack_stage(std::move(p));
    return make_attention_kernel(std::move(k));
  };
  Var slice("slice"), tile("tile");
  if (s.parallel == AttentionParallel::HeadsAndQueryTiles) {
    Var task("task");
    Stmt body = make_let(slice, task / tiles, make_let(tile, task % tiles, kernel(slice, tile)));
    return make_for(task, 0, Expr(a.slices) * tiles, ForKind::Parallel, body);
  }
  Stmt body = make_for(tile, 0, tiles, ForKind::Serial, kernel(slice, tile));
  return make_for(slice, 0, a.slices,
                  s.parallel == AttentionParallel::Heads ? ForKind::Parallel : ForKind::Serial,
                  body);
}

LoweredKernel lower(const schedule::BoundAttentionSchedule& bound, const PassLogger& log) {
  const te::Operator& op = bound.op();
  auto step = [&](const char* pass, const Stmt& stmt) {
    if (log) log(pass, to_string(stmt));
    return stmt;
  };
  step("reference_loops", reference_loops(op));
  Stmt body =
      step("build_attention_loops", build_attention_loops(bound.attention(), bound.schedule()));
  body = step("simplify", simplify(body));
  LoweredKernel k;
  k.compute = compute_function(op, body);
  const ops::AttentionOp& a = bound.attention();
  k.compute.work = Expr(4 * a.slices * a.head_dim) * a.t * a.t;  // Q K^T and P V
  return k;
}

}  // namespace dietcode::lower
