#include "lower/pipeline.h"

#include "ir/printer.h"
#include "ir/simplify.h"
#include "lower/build_loop_nest.h"
#include "lower/insert_packing.h"
#include "lower/mark_parallel.h"
#include "lower/reference_loops.h"
#include "ops/contraction.h"
#include "support/hash.h"

namespace dietcode::lower {

using namespace ir;

namespace {

Var parallel_loop(const schedule::MicroKernelSchedule& s, const ops::Contraction& c,
                  const LoopNest& nest) {
  switch (s.parallel) {
    case schedule::ParallelAxis::M:
      return nest.m_block;
    case schedule::ParallelAxis::N:
      return nest.n_block;
    case schedule::ParallelAxis::Batch:
      return c.batch_axes.front();  // bind() checked it exists
    case schedule::ParallelAxis::None:
      return Var();
  }
  return Var();
}

}  // namespace

LoweredFunc compute_function(const te::Operator& op, Stmt body) {
  LoweredFunc f;
  f.name = op.name;
  for (const te::ShapeVar& v : op.shape_vars) f.shape_vars.push_back(v.var);
  for (const te::Input& in : op.inputs) f.buffers.push_back(in.tensor);
  f.buffers.push_back(op.compute.output);
  f.body = std::move(body);
  return f;
}

LoweredKernel lower(const schedule::BoundSchedule& bound, const PassLogger& log) {
  const te::Operator& op = bound.op();
  const schedule::MicroKernelSchedule& s = bound.schedule();
  const ops::Contraction& c = bound.contraction();
  auto step = [&](const char* pass, const Stmt& stmt) {
    if (log) log(pass, to_string(stmt));
    return stmt;
  };
  step("reference_loops", reference_loops(op));

  LoopNest nest = build_loop_nest(c, s);
  Stmt body = step("build_loop_nest", nest.body);
  body = step("mark_parallel", mark_parallel(body, parallel_loop(s, c, nest), c.batch_axes));
  body = step("insert_packing", insert_packing(body));
  body = step("simplify", simplify(body));

  LoweredKernel k;
  k.compute = compute_function(op, body);
  Expr work = Expr(2) * c.m_extent * c.n_extent * c.k_extent;
  for (const Expr& e : c.batch_extents) work = work * e;
  k.compute.work = simplify(work);
  if (nest.prepack.defined()) {
    k.prepacked_b = true;
    k.prepacked_input = c.b_input_index;
    k.compute.buffers[c.b_input_index] = nest.packed_b;
    k.packed_b_size = nest.packed_b_size;
    k.prepack.name = op.name + "_prepack_" + c.b.tensor.name();
    k.prepack.shape_vars = k.compute.shape_vars;
    k.prepack.buffers = {c.b.tensor, nest.packed_b};
    k.prepack.body = step("prepack", simplify(expand_pack_stages(nest.prepack)));
  }
  return k;
}

}  // namespace dietcode::lower

namespace dietcode::lower {

uint64_t packed_layout_id(const LoweredKernel& k) {
  return k.prepacked_b ? fnv1a64(ir::to_string(k.prepack.body)) : 0;
}

LoweredKernel lower(const te::Operator& op, const schedule::AnySchedule& s, const PassLogger& log) {
  return std::visit([&](const auto& x) { return lower(bind(x, op), log); }, s);
}

}  // namespace dietcode::lower
