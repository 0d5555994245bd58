#include "ops/attention.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "ir/visit.h"
#include "support/error.h"

namespace dietcode::ops {

using ir::Expr;
using ir::Var;

namespace {

constexpr int64_t kMaxHeadDim = 1024;  // the fused kernel keeps a query tile's rows on its stack

std::string shape_text(const std::vector<int64_t>& shape) {
  std::vector<std::string> parts;
  for (int64_t d : shape) parts.push_back(d == kT ? "T" : fmt::format("{}", d));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

// Q, K or V: [slices, T, D] with positive constants and the symbolic T in the middle.
void check_qkv(const char* name, const std::vector<int64_t>& s) {
  if (s.size() != 3)
    user_error("attention: input {} has shape {}; expected [batch x heads, T, head size]", name,
               shape_text(s));
  if (s[1] != kT)
    user_error(
        "attention: input {} has sequence length {} in {}; expected T, the one symbolic length "
        "shared by Q, K and V",
        name, s[1], shape_text(s));
  for (int d : {0, 2})
    if (s[d] < 1)
      user_error("attention: input {} has dimension {} in {}; expected a positive extent", name,
                 s[d] == kT ? std::string("T") : std::to_string(s[d]), shape_text(s));
}

}  // namespace

AttentionShapes attention_shapes(int64_t batch, int64_t heads, int64_t head_dim, bool mask) {
  AttentionShapes s;
  s.q = s.k = s.v = {batch * heads, kT, head_dim};
  if (mask) s.mask = {batch, kT};
  return s;
}

te::Operator attention(int64_t t_min, int64_t t_max, int64_t heads, const AttentionShapes& shapes,
                       std::optional<double> scale) {
  if (t_min < 1 || t_max < t_min)
    user_error("attention: range of T [{}, {}]; expected 1 <= min <= max (T = 0 has no keys)",
               t_min, t_max);
  check_qkv("Q", shapes.q);
  check_qkv("K", shapes.k);
  check_qkv("V", shapes.v);
  for (auto [name, s] : {std::pair{"K", &shapes.k}, std::pair{"V", &shapes.v}}) {
    if ((*s)[0] != shapes.q[0])
      user_error(
          "attention: input {} has {} batch x heads slices in {}, but Q has {} in {}; expected "
          "the same count",
          name, (*s)[0], shape_text(*s), shapes.q[0], shape_text(shapes.q));
    if ((*s)[2] != shapes.q[2])
      user_error("attention: input {} has head size {} in {}, but Q has {} in {}; expected equal",
                 name, (*s)[2], shape_text(*s), shapes.q[2], shape_text(shapes.q));
  }
  const int64_t slices = shapes.q[0], head_dim = shapes.q[2];
  if (head_dim > kMaxHeadDim)
    user_error("attention: head size {}; expected at most {}", head_dim, kMaxHeadDim);
  if (heads < 1 || slices % heads != 0)
    user_error("attention: {} heads do not divide Q's {} batch x heads slices; expected a divisor",
               heads, slices);
  const bool masked = !shapes.mask.empty();
  if (masked) {
    const std::vector<int64_t>& m = shapes.mask;
    if (m.size() != 2 || m[0] != slices / heads || m[1] != kT)
      user_error(
          "attention: input mask has shape {}; expected [batch, T] = [{}, T] (one additive value "
          "per key position of each of the {} / {} sequences)",
          shape_text(m), slices / heads, slices, heads);
  }
  double s = scale.value_or(1.0 / std::sqrt(double(head_dim)));
  if (!std::isfinite(s) || !(s > 0))
    user_error("attention: scale {}; expected a positive finite number", s);

  te::ShapeVar t = te::shape_var("T", t_min, t_max);
  Expr T = t.var, D = head_dim, BH = slices;
  te::Input q = te::input("Q", {BH, T, D});
  te::Input k = te::input("K", {BH, T, D});
  te::Input v = te::input("V", {BH, T, D});
  te::Input mask;
  if (masked) mask = te::input("mask", {Expr(slices / heads), T});
  auto score = [&](const Expr& b, const Expr& i, const Expr& j) {
    Var d("d");
    Expr dot = ir::reduce_sum(d, D, ir::load(q.tensor, {b, i, d}) * ir::load(k.tensor, {b, j, d}));
    Expr e = dot * ir::make_float(s);
    if (masked) e = e + ir::load(mask.tensor, {b / Expr(heads), j});
    return e;
  };
  te::ComputeOp scores =
      te::compute("scores", {BH, T, T}, {"b", "i", "j"},
                  [&](const std::vector<Var>& ax) { return score(ax[0], ax[1], ax[2]); });
  auto s_at = [&](const Expr& b, const Expr& i, const Expr& j) {
    return ir::load(scores.output, {b, i, j});
  };
  te::ComputeOp mx = te::row_stage("row_max", {BH, T}, {"b", "i"}, [&](const std::vector<Var>& ax) {
    Var j("j");
    return ir::reduce_max(j, T, s_at(ax[0], ax[1], j));
  });
  auto p = [&](const Expr& b, const Expr& i, const Expr& j) {
    return ir::call(ir::CallOp::Exp, {s_at(b, i, j) - ir::load(mx.output, {b, i})});
  };
  te::ComputeOp inv =
      te::row_stage("inv_sum", {BH, T}, {"b", "i"}, [&](const std::vector<Var>& ax) {
        Var j("j");
        return ir::make_float(1.0) / ir::reduce_sum(j, T, p(ax[0], ax[1], j));
      });
  te::ComputeOp o = te::compute("O", {BH, T, D}, {"b", "i", "d"}, [&](const std::vector<Var>& ax) {
    Var j("j");
    return ir::reduce_sum(j, T, p(ax[0], ax[1], j) * ir::load(v.tensor, {ax[0], j, ax[2]})) *
           ir::load(inv.output, {ax[0], ax[1]});
  });
  std::vector<te::Input> inputs{q, k, v};
  if (masked) inputs.push_back(mask);
  return te::Operator{"attention", {t}, std::move(inputs), o, {scores, mx, inv}};
}

AttentionOp match_attention(const te::Operator& op) {
  auto refuse = [&](const std::string& why) -> AttentionOp {
    user_error("operator {}: not attention in the form ops::attention declares ({})", op.name, why);
  };
  if (op.name != "attention") return refuse("its name is not 'attention'");
  if (op.shape_vars.size() != 1) return refuse("expected one shape variable, T");
  if (op.inputs.size() != 3 && op.inputs.size() != 4)
    return refuse("expected inputs Q, K, V[, mask]");
  if (op.stages.size() != 3) return refuse("expected the stages scores, row_max, inv_sum");
  const ir::Buffer& qb = op.inputs[0].tensor;
  if (qb.rank() != 3) return refuse("Q is not of rank 3");
  const int64_t* slices = ir::as_const_int(qb.shape()[0]);
  const int64_t* head_dim = ir::as_const_int(qb.shape()[2]);
  if (!slices || !head_dim) return refuse("Q's first and last dimensions are not constants");
  AttentionOp a;
  a.slices = *slices;
  a.head_dim = *head_dim;
  bool masked = op.inputs.size() == 4;
  if (masked) {
    const int64_t* batch = ir::as_const_int(op.inputs[3].tensor.shape()[0]);
    if (!batch || *batch < 1 || a.slices % *batch != 0)
      return refuse("the mask's first dimension does not divide Q's");
    a.heads = a.slices / *batch;
  }
  const ir::FloatImmNode* scale = nullptr;
  ir::visit_exprs(op.stages[0].body, [&](const Expr& e) {
    if (!scale) scale = e.as<ir::FloatImmNode>();
  });
  if (!scale) return refuse("no scale in the scores");
  a.scale = scale->value;
  const te::ShapeVar& t = op.shape_vars[0];
  te::Operator canonical =
      attention(t.min, t.max, a.heads,
                attention_shapes(a.slices / a.heads, a.heads, a.head_dim, masked), a.scale);
  if (canonical.describe() != op.describe()) return refuse("its definition differs");
  a.t = t.var;
  a.q = op.inputs[0].tensor;
  a.k = op.inputs[1].tensor;
  a.v = op.inputs[2].tensor;
  if (masked) a.mask = op.inputs[3].tensor;
  a.output = op.compute.output;
  return a;
}

bool is_attention(const te::Operator& op) {
  if (op.name != "attention") return false;
  try {
    match_attention(op);
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace dietcode::ops
