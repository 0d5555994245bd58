#include "ops/contraction.h"

#include "ir/printer.h"
#include "support/error.h"

namespace dietcode::ops {

namespace {

bool index_uses(const std::vector<ir::Expr>& index, const ir::Var& v) {
  for (const ir::Expr& e : index)
    if (ir::uses_var(e, v.get())) return true;
  return false;
}

int input_position(const te::Operator& op, const ir::Buffer& t) {
  for (size_t i = 0; i < op.inputs.size(); ++i)
    if (op.inputs[i].tensor == t) return static_cast<int>(i);
  user_error("operator {}: tensor {} is read but is not one of its inputs", op.name, t.name());
}

}  // namespace

Contraction match_contraction(const te::Operator& op) {
  Contraction c;
  const te::ComputeOp& comp = op.compute;
  c.output = comp.output;
  c.output_axes = comp.axes;
  auto unsupported = [&](const std::string& why) {
    user_error(
        "operator {}: {} is not a contraction this compiler schedules ({}); expected "
        "act(sum_k A(.., m, k) * B(.., n, k) [+ bias(n)])",
        op.name, ir::to_string(comp.body), why);
  };

  // Peel the epilogue: activation, then bias.
  ir::Expr e = comp.body;
  if (!op.stages.empty()) unsupported("it has row stages (a row operator)");
  if (const auto* call = e.as<ir::CallNode>()) {
    if (call->op != ir::CallOp::Relu && call->op != ir::CallOp::Gelu)
      unsupported(std::string("the epilogue ") + ir::to_string(call->op) + " is not relu or gelu");
    c.activation = call->op == ir::CallOp::Relu ? ir::Activation::Relu : ir::Activation::Gelu;
    e = call->args[0];
  }
  if (e.kind() == ir::ExprKind::Add) {
    const ir::BinaryNode* add = ir::as_binary(e);
    const auto* bias = add->b.as<ir::LoadNode>();
    if (!bias || add->a.kind() != ir::ExprKind::Reduce)
      unsupported("the sum is not plain reduce + bias");
    c.bias = ContractionOperand{bias->buffer, bias->indices,
                                op.inputs[input_position(op, bias->buffer)].constant};
    e = add->a;
  }
  const auto* red = e.as<ir::ReduceNode>();
  if (!red) unsupported("no reduction at the top");
  if (red->op != ir::ReduceOp::Sum) unsupported("the reduction is not a sum");
  c.k = red->axis;
  c.k_extent = red->extent;
  if (red->body.kind() != ir::ExprKind::Mul) unsupported("the reduction body is not a product");
  const ir::BinaryNode* mul = ir::as_binary(red->body);
  const auto* x = mul->a.as<ir::LoadNode>();
  const auto* y = mul->b.as<ir::LoadNode>();
  if (!x || !y) unsupported("the product is not of two tensor reads");

  if (comp.axes.size() < 2) unsupported("the output has fewer than two dimensions");
  // n is the last output axis (the output must be contiguous along the vector side).
  c.n = comp.axes.back();
  c.n_extent = comp.output.shape().back();
  if (index_uses(x->indices, c.n)) std::swap(x, y);
  if (index_uses(x->indices, c.n)) unsupported("both operands depend on the last output axis");
  if (!index_uses(y->indices, c.n)) unsupported("no operand depends on the last output axis");
  bool found_m = false;
  for (size_t i = 0; i + 1 < comp.axes.size(); ++i) {
    const ir::Var& ax = comp.axes[i];
    bool in_a = index_uses(x->indices, ax), in_b = index_uses(y->indices, ax);
    if (in_a && !in_b) {
      if (found_m) unsupported("more than one axis belongs to the first operand alone");
      c.m = ax;
      c.m_extent = comp.output.shape()[i];
      found_m = true;
    } else if (in_a) {
      c.batch_axes.push_back(ax);
      c.batch_extents.push_back(comp.output.shape()[i]);
    } else {
      unsupported("output axis " + ax.name() + " is not read by the first operand");
    }
  }
  if (!found_m) unsupported("no output axis belongs to the first operand alone");
  if (!index_uses(x->indices, c.k) || !index_uses(y->indices, c.k))
    unsupported("both operands must read the reduction axis");
  c.a =
      ContractionOperand{x->buffer, x->indices, op.inputs[input_position(op, x->buffer)].constant};
  c.b_input_index = input_position(op, y->buffer);
  c.b = ContractionOperand{y->buffer, y->indices, op.inputs[c.b_input_index].constant};
  if (c.bias.tensor.defined()) {
    for (const ir::Expr& i : c.bias.index)
      for (const ir::Var& ax : comp.axes)
        if (!(ax == c.n) && ir::uses_var(i, ax.get()))
          unsupported("the bias must depend on n only");
  }
  return c;
}

}  // namespace dietcode::ops
