#include "lower/row_loops.h"

#include <algorithm>

#include "ir/printer.h"
#include "ir/simplify.h"
#include "ir/visit.h"
#include "lower/pipeline.h"
#include "lower/reference_loops.h"

namespace dietcode::lower {

using namespace ir;

namespace {

bool reads(const Expr& e, const Buffer& buffer) {
  bool found = false;
  visit_exprs(e, [&](const Expr& x) {
    if (const auto* l = x.as<LoadNode>(); l && l->buffer == buffer) found = true;
  });
  return found;
}

// Sets k.reuse when the output is a sum reduction's element (at the output's column)
// times a factor constant along the row, and that reduction's pass is the last one.
void find_reuse(RowKernelNode& k) {
  const auto* mul = k.value.kind() == ExprKind::Mul ? as_binary(k.value) : nullptr;
  if (!mul || k.reductions.empty()) return;
  int last_pass = k.reductions.back().pass;
  for (size_t i = 0; i < k.reductions.size(); ++i) {
    const RowReductionStage& r = k.reductions[i];
    if (r.op != ReduceOp::Sum || r.pass != last_pass) continue;
    std::string element = to_string(substitute(r.element, VarMap{{r.axis.get(), Expr(k.col)}}));
    for (auto [factor, scale] : {std::pair{mul->a, mul->b}, std::pair{mul->b, mul->a}}) {
      if (to_string(factor) != element || uses_var(scale, k.col.get())) continue;
      k.reuse = static_cast<int>(i);
      k.scale = scale;
      return;
    }
  }
}

}  // namespace

Stmt build_row_loops(const ops::RowOp& r, const schedule::RowSchedule& s) {
  RowKernelNode k;
  k.vector_width = schedule::vector_isa(s.isa).width;
  k.unroll = s.unroll;
  k.length = r.length;
  int pass = 0;
  for (size_t i = 0; i < r.reductions.size(); ++i) {
    const ops::RowReduction& red = r.reductions[i];
    if (i > 0) {
      // A reduction whose elements read a result of the current pass cannot join it.
      bool depends = std::any_of(k.reductions.begin(), k.reductions.end(), [&](const auto& prev) {
        return prev.pass == pass && reads(red.element, prev.result);
      });
      if (s.passes == schedule::ReductionPasses::Separate || depends) ++pass;
    }
    k.reductions.push_back(
        RowReductionStage{red.op, red.axis, red.element, red.reduce, red.value, red.result, pass});
  }
  k.col = r.col;
  k.output = r.output;
  for (const Var& a : r.row_axes) k.output_index.push_back(a);
  k.output_index.push_back(r.col);
  k.value = r.value;
  find_reuse(k);

  // Row axes from the flat row number, innermost fastest.
  Var row("row");
  Expr stride = 1;
  k.row = row;
  k.row_axes = r.row_axes;
  k.row_axis_values.resize(r.row_axes.size());
  for (size_t d = r.row_axes.size(); d-- > 0;) {
    Expr digit = row / stride;
    if (d > 0) digit = digit % r.row_extents[d];
    k.row_axis_values[d] = digit;
    stride = stride * r.row_extents[d];
  }
  auto kernel = [&](Expr first_row, int64_t rows) {
    RowKernelNode c = k;
    c.first_row = std::move(first_row);
    c.rows = rows;
    return make_row_kernel(std::move(c));
  };

  // Tasks of rows_per_task rows; in a task, groups of `interleave` rows, then the rows left.
  Expr rows = stride;
  Expr per_task = s.rows_per_task;
  const int64_t group = std::min(s.interleave, s.rows_per_task);
  Var task("task"), in_task("row_in_task"), count("rows_in_task"), g("group");
  Expr first = task * per_task;
  Stmt body;
  if (group == 1) {
    body = make_for(in_task, 0, min(per_task, rows - first), ForKind::Serial,
                    kernel(first + in_task, 1));
  } else {
    Expr groups = Expr(count) / group;
    body = make_let(
        count, min(per_task, rows - first),
        make_block({make_for(g, 0, groups, ForKind::Serial, kernel(first + g * group, group)),
                    make_for(in_task, groups * group, Expr(count) - groups * group, ForKind::Serial,
                             kernel(first + in_task, 1))}));
  }
  return make_for(task, 0, ceil_div(rows, per_task),
                  s.parallel ? ForKind::Parallel : ForKind::Serial, body);
}

LoweredKernel lower(const schedule::BoundRowSchedule& bound, const PassLogger& log) {
  const te::Operator& op = bound.op();
  auto step = [&](const char* pass, const Stmt& stmt) {
    if (log) log(pass, to_string(stmt));
    return stmt;
  };
  step("reference_loops", reference_loops(op));
  Stmt body = step("build_row_loops", build_row_loops(bound.row_op(), bound.schedule()));
  body = step("simplify", simplify(body));
  LoweredKernel k;
  k.compute = compute_function(op, body);
  // About 2 operations per element and pass over a row (each reduction, then the output).
  const ops::RowOp& r = bound.row_op();
  Expr elements = r.length;
  for (const Expr& e : r.row_extents) elements = elements * e;
  k.compute.work = simplify(Expr(int64_t(2 * (r.reductions.size() + 1))) * elements);
  return k;
}

}  // namespace dietcode::lower
