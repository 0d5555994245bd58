#include "ops/contraction.h"

#include "ir/affine.h"
#include "ir/printer.h"
#include "ir/visit.h"
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
        "an elementwise expression of sum_k A(.., m, k) * B(.., n, k) and of other inputs "
        "read at the output element, its row or its column",
        op.name, ir::to_string(comp.body), why);
  };

  // Peel the epilogue: the one reduction becomes `product`, each distinct read of
  // another tensor an epilogue input; what is left must be elementwise float work.
  if (!op.stages.empty()) unsupported("it has row stages (a row operator)");
  ir::Expr e;
  c.product = ir::Var("product", ir::Type::Float);
  std::function<ir::Expr(const ir::Expr&)> peel = [&](const ir::Expr& x) -> ir::Expr {
    switch (x.kind()) {
      case ir::ExprKind::Reduce:  // the product, possibly read more than once
        if (e.defined() && !x.same_as(e) && ir::to_string(x) != ir::to_string(e))
          unsupported("the epilogue holds a second reduction");
        e = x;
        return c.product;
      case ir::ExprKind::Load: {
        const auto* l = x.as<ir::LoadNode>();
        for (const Contraction::EpilogueInput& in : c.epilogue_inputs)
          if (in.operand.tensor == l->buffer &&
              ir::to_string(x) == ir::to_string(ir::load(l->buffer, in.operand.index)))
            return in.value;
        if (l->buffer == comp.output) unsupported("the epilogue reads the output");
        std::string name = fmt::format("{}_{}", l->buffer.name(), c.epilogue_inputs.size());
        c.epilogue_inputs.push_back(
            {ContractionOperand{l->buffer, l->indices,
                                op.inputs[input_position(op, l->buffer)].constant},
             ir::Var(name, ir::Type::Float)});
        return c.epilogue_inputs.back().value;
      }
      case ir::ExprKind::FloatImm:
        return x;
      case ir::ExprKind::Call:
        if (x.as<ir::CallNode>()->op == ir::CallOp::ToFloat)
          unsupported("the epilogue converts an index to float");
        break;
      case ir::ExprKind::Var:
      case ir::ExprKind::IntImm:
        unsupported("the epilogue reads " + ir::to_string(x) + ", not a tensor element");
      default:
        break;
    }
    std::vector<ir::Expr> kids = ir::children(x);
    for (ir::Expr& k : kids) k = peel(k);
    return ir::with_children(x, kids);
  };
  ir::Expr epilogue = peel(comp.body);
  if (!e.defined()) unsupported("no reduction");
  if (!(epilogue.kind() == ir::ExprKind::Var && epilogue.as<ir::VarNode>() == c.product.get()))
    c.epilogue = epilogue;
  const auto* red = e.as<ir::ReduceNode>();
  if (!red) unsupported("no reduction");
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
  // Epilogue inputs are read at the output element: no reduction axis, and unit stride
  // or none along n (a vector or a broadcast in the register tile).
  for (const Contraction::EpilogueInput& in : c.epilogue_inputs) {
    const std::string what = "the epilogue input " + in.operand.tensor.name();
    if (index_uses(in.operand.index, c.k)) unsupported(what + " is indexed by the reduction axis");
    auto form = ir::affine_form(ir::flatten_index(in.operand.tensor, in.operand.index), {c.m, c.n});
    if (!form) unsupported(what + " is not read at an affine position of the output");
    if (!ir::is_const(form->coefficients[1], 0) && !ir::is_const(form->coefficients[1], 1))
      unsupported(what + " is not contiguous along the output's last axis");
  }
  return c;
}

}  // namespace dietcode::ops
