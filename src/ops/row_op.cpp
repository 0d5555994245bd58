#include "ops/row_op.h"

#include <algorithm>

#include "ir/printer.h"
#include "ir/visit.h"
#include "support/error.h"

namespace dietcode::ops {

namespace {

bool same_extent(const ir::Expr& a, const ir::Expr& b) {
  return a.same_as(b) || ir::to_string(a) == ir::to_string(b);
}

class Matcher {
 public:
  explicit Matcher(const te::Operator& op) : op_(op) {}

  [[noreturn]] void unsupported(const std::string& what, const std::string& why) const {
    user_error(
        "operator {}: {} is not a row operator ({}); expected elementwise work over rows, "
        "optionally after sum/max reductions along the last axis",
        op_.name, what, why);
  }

  RowOp match() {
    const te::ComputeOp& out = op_.compute;
    RowOp r;
    r.output = out.output;
    if (out.axes.empty()) unsupported(out.output.name(), "the output has no dimensions");
    r.row_axes.assign(out.axes.begin(), out.axes.end() - 1);
    r.row_extents.assign(out.output.shape().begin(), out.output.shape().end() - 1);
    r.col = out.axes.back();
    r.length = out.output.shape().back();
    for (const te::ComputeOp& stage : op_.stages) r.reductions.push_back(match_stage(r, stage));
    bool has_reduce = false;
    ir::visit_exprs(out.body, [&](const ir::Expr& e) {
      if (e.kind() == ir::ExprKind::Reduce) has_reduce = true;
    });
    if (has_reduce)
      unsupported(ir::to_string(out.body), "the output reduces; put reductions in row stages");
    check_reads(r, out.body, r.col, op_.stages.size(), out.output.name());
    r.value = out.body;
    return r;
  }

 private:
  RowReduction match_stage(const RowOp& r, const te::ComputeOp& stage) {
    const std::string name = "stage " + stage.output.name();
    if (stage.axes.size() != r.row_axes.size())
      unsupported(name, fmt::format("it has {} dimensions, expected {} (the output's rows)",
                                    stage.axes.size(), r.row_axes.size()));
    for (size_t d = 0; d < stage.axes.size(); ++d)
      if (!same_extent(stage.output.shape()[d], r.row_extents[d]))
        unsupported(name, "its shape is not the output's leading dimensions");
    // Stage axes become the output's row axes, so that one set of variables names a row.
    ir::VarMap to_rows;
    for (size_t d = 0; d < stage.axes.size(); ++d) to_rows[stage.axes[d].get()] = r.row_axes[d];
    ir::Expr value = ir::substitute(stage.body, to_rows);
    std::vector<ir::Expr> reduces;
    ir::visit_exprs(value, [&](const ir::Expr& e) {
      if (e.kind() == ir::ExprKind::Reduce) reduces.push_back(e);
    });
    if (reduces.size() != 1)
      unsupported(name, fmt::format("it holds {} reductions, expected one", reduces.size()));
    const auto* red = reduces[0].as<ir::ReduceNode>();
    if (!same_extent(red->extent, r.length))
      unsupported(name, fmt::format("it reduces over {} elements, not the row length {}",
                                    ir::to_string(red->extent), ir::to_string(r.length)));
    bool nested = false;
    ir::visit_exprs(red->body, [&](const ir::Expr& e) {
      if (e.kind() == ir::ExprKind::Reduce) nested = true;
    });
    if (nested) unsupported(name, "its reduction nests another");
    size_t index = &stage - op_.stages.data();
    check_reads(r, red->body, red->axis, index, name);
    // Outside the reduction nothing runs along the row: check with a fresh axis.
    check_reads(r, value, ir::Var("no_axis"), index, name);
    return RowReduction{stage.output, red->op, red->axis, red->body, reduces[0], value};
  }

  // Every read in `e` is of an input (contiguous or constant along `axis`) or of one of
  // the first `visible` stages at the current row.
  void check_reads(const RowOp& r, const ir::Expr& e, const ir::Var& axis, size_t visible,
                   const std::string& where) {
    ir::visit_exprs(e, [&](const ir::Expr& x) {
      if (const auto* call = x.as<ir::CallNode>();
          call && call->op == ir::CallOp::ToFloat && ir::uses_var(call->args[0], axis.get()))
        unsupported(where, "an integer converted to float varies along the row");
      const auto* l = x.as<ir::LoadNode>();
      if (!l) return;
      auto stage = std::find_if(op_.stages.begin(), op_.stages.end(),
                                [&](const te::ComputeOp& s) { return s.output == l->buffer; });
      if (stage != op_.stages.end()) {
        if (static_cast<size_t>(stage - op_.stages.begin()) >= visible)
          unsupported(where,
                      fmt::format("it reads stage {} before it is computed", l->buffer.name()));
        for (size_t d = 0; d < l->indices.size(); ++d) {
          const auto* v = l->indices[d].as<ir::VarNode>();
          if (!v || v != r.row_axes[d].get())
            unsupported(where, fmt::format("it reads stage {} at another row than its own",
                                           l->buffer.name()));
        }
        return;
      }
      bool is_input = std::any_of(op_.inputs.begin(), op_.inputs.end(),
                                  [&](const te::Input& in) { return in.tensor == l->buffer; });
      if (!is_input)
        unsupported(where, fmt::format("it reads {}, which is not an input", l->buffer.name()));
      for (size_t d = 0; d + 1 < l->indices.size(); ++d)
        if (ir::uses_var(l->indices[d], axis.get()))
          unsupported(where, fmt::format("{} is read along the row in a dimension other than its "
                                         "last",
                                         l->buffer.name()));
      if (l->indices.empty()) return;
      const ir::Expr& last = l->indices.back();
      if (ir::uses_var(last, axis.get()) &&
          last.get() != static_cast<const ir::ExprNode*>(axis.get()))
        unsupported(where, fmt::format("{} is read at {} along the row; expected the row index "
                                       "itself (contiguous) or none (broadcast)",
                                       l->buffer.name(), ir::to_string(last)));
    });
  }

  const te::Operator& op_;
};

}  // namespace

RowOp match_row_op(const te::Operator& op) {
  return Matcher(op).match();
}

}  // namespace dietcode::ops
