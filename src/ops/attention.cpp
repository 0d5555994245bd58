#include "ops/attention.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <functional>

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

// The operator of either layout. Separate: Q, K, V, O [slices, T, D]. Packed: QKV
// [batch, T, 3 * heads * D] in, O [batch, T, heads * D] out; slice = sequence * heads +
// head.
te::Operator declare(const te::ShapeVar& t, int64_t slices, int64_t heads, int64_t head_dim,
                     bool masked, double s, bool packed) {
  Expr T = t.var, D = head_dim, BH = slices, H = heads;
  const int64_t batch = slices / heads, width = heads * head_dim;
  std::vector<te::Input> inputs;
  // Element d of row `row` of Q (0), K (1) or V (2) of a slice.
  std::function<Expr(int, const Expr&, const Expr&, const Expr&)> at;
  if (packed) {
    te::Input qkv = te::input("QKV", {Expr(batch), T, Expr(3 * width)});
    inputs.push_back(qkv);
    at = [=](int which, const Expr& b, const Expr& row, const Expr& d) {
      return ir::load(qkv.tensor, {b / H, row, Expr(which * width) + (b % H) * D + d});
    };
  } else {
    te::Input q = te::input("Q", {BH, T, D});
    te::Input k = te::input("K", {BH, T, D});
    te::Input v = te::input("V", {BH, T, D});
    inputs = {q, k, v};
    at = [=](int which, const Expr& b, const Expr& row, const Expr& d) {
      return ir::load(inputs[which].tensor, {b, row, d});
    };
  }
  te::Input mask;
  if (masked) {
    mask = te::input("mask", {Expr(batch), T});
    inputs.push_back(mask);
  }
  auto score = [&](const Expr& b, const Expr& i, const Expr& j) {
    Var d("d");
    Expr dot = ir::reduce_sum(d, D, at(0, b, i, d) * at(1, b, j, d));
    Expr e = dot * ir::make_float(s);
    if (masked) e = e + ir::load(mask.tensor, {b / H, j});
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
  // Output element of slice b, query row i, value d.
  auto out = [&](const Expr& b, const Expr& i, const Expr& d) {
    Var j("j");
    return ir::reduce_sum(j, T, p(b, i, j) * at(2, b, j, d)) * ir::load(inv.output, {b, i});
  };
  te::ComputeOp o =
      packed ? te::compute("O", {Expr(batch), T, Expr(width)}, {"n", "i", "c"},
                           [&](const std::vector<Var>& ax) {
                             return out(Expr(ax[0]) * H + Expr(ax[2]) / D, ax[1], Expr(ax[2]) % D);
                           })
             : te::compute("O", {BH, T, D}, {"b", "i", "d"},
                           [&](const std::vector<Var>& ax) { return out(ax[0], ax[1], ax[2]); });
  return te::Operator{"attention", {t}, std::move(inputs), o, {scores, mx, inv}};
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

  return declare(te::shape_var("T", t_min, t_max), slices, heads, head_dim, masked, s, false);
}

te::Operator attention_packed_qkv(int64_t t_min, int64_t t_max, int64_t batch, int64_t heads,
                                  int64_t head_dim, bool mask, std::optional<double> scale) {
  if (t_min < 1 || t_max < t_min)
    user_error("attention: range of T [{}, {}]; expected 1 <= min <= max (T = 0 has no keys)",
               t_min, t_max);
  if (batch < 1 || heads < 1 || head_dim < 1)
    user_error("attention: batch {}, heads {}, head size {}; expected positive counts", batch,
               heads, head_dim);
  if (head_dim > kMaxHeadDim)
    user_error("attention: head size {}; expected at most {}", head_dim, kMaxHeadDim);
  double s = scale.value_or(1.0 / std::sqrt(double(head_dim)));
  if (!std::isfinite(s) || !(s > 0))
    user_error("attention: scale {}; expected a positive finite number", s);
  return declare(te::shape_var("T", t_min, t_max), batch * heads, heads, head_dim, mask, s, true);
}

AttentionOp match_attention(const te::Operator& op) {
  auto refuse = [&](const std::string& why) -> AttentionOp {
    user_error("operator {}: not attention in the form ops::attention declares ({})", op.name, why);
  };
  if (op.name != "attention") return refuse("its name is not 'attention'");
  if (op.shape_vars.size() != 1) return refuse("expected one shape variable, T");
  if (op.inputs.empty()) return refuse("no inputs");
  AttentionOp a;
  a.packed_qkv = op.inputs[0].tensor.name() == "QKV";
  const size_t qkv_inputs = a.packed_qkv ? 1 : 3;
  if (op.inputs.size() != qkv_inputs && op.inputs.size() != qkv_inputs + 1)
    return refuse("expected inputs Q, K, V[, mask] or QKV[, mask]");
  if (op.stages.size() != 3) return refuse("expected the stages scores, row_max, inv_sum");
  const ir::Buffer& qb = op.inputs[0].tensor;
  if (qb.rank() != 3) return refuse("Q is not of rank 3");
  const int64_t* first = ir::as_const_int(qb.shape()[0]);
  const int64_t* last = ir::as_const_int(qb.shape()[2]);
  if (!first || !last) return refuse("Q's first and last dimensions are not constants");
  // The head size is the extent of the scores' reduction.
  const ir::ReduceNode* dot = nullptr;
  const ir::FloatImmNode* scale = nullptr;
  ir::visit_exprs(op.stages[0].body, [&](const Expr& e) {
    if (!dot) dot = e.as<ir::ReduceNode>();
    if (!scale) scale = e.as<ir::FloatImmNode>();
  });
  if (!dot || !ir::as_const_int(dot->extent)) return refuse("no reduction over the head size");
  if (!scale) return refuse("no scale in the scores");
  a.head_dim = *ir::as_const_int(dot->extent);
  a.scale = scale->value;
  const bool masked = op.inputs.size() == qkv_inputs + 1;
  const te::ShapeVar& t = op.shape_vars[0];
  te::Operator canonical;
  if (a.packed_qkv) {
    if (*last % (3 * a.head_dim) != 0) return refuse("QKV's rows are not 3 x heads x head size");
    a.heads = *last / (3 * a.head_dim);
    a.slices = *first * a.heads;
    canonical = attention_packed_qkv(t.min, t.max, *first, a.heads, a.head_dim, masked, a.scale);
  } else {
    a.slices = *first;
    if (masked) {
      const int64_t* batch = ir::as_const_int(op.inputs[3].tensor.shape()[0]);
      if (!batch || *batch < 1 || a.slices % *batch != 0)
        return refuse("the mask's first dimension does not divide Q's");
      a.heads = a.slices / *batch;
    }
    canonical =
        attention(t.min, t.max, a.heads,
                  attention_shapes(a.slices / a.heads, a.heads, a.head_dim, masked), a.scale);
  }
  if (canonical.describe() != op.describe()) return refuse("its definition differs");
  a.t = t.var;
  a.q = op.inputs[0].tensor;
  a.k = op.inputs[a.packed_qkv ? 0 : 1].tensor;
  a.v = op.inputs[a.packed_qkv ? 0 : 2].tensor;
  if (masked) a.mask = op.inputs.back().tensor;
  a.output = op.compute.output;
  return a;
}

Expr AttentionOp::input_offset(int which, const Expr& slice) const {
  if (!packed_qkv) return slice * Expr(t) * Expr(head_dim);
  const int64_t width = heads * head_dim;
  return (slice / Expr(heads)) * Expr(t) * Expr(3 * width) + Expr(which * width) +
         (slice % Expr(heads)) * Expr(head_dim);
}

int64_t AttentionOp::input_row_stride() const {
  return packed_qkv ? 3 * heads * head_dim : head_dim;
}

Expr AttentionOp::output_offset(const Expr& slice) const {
  if (!packed_qkv) return slice * Expr(t) * Expr(head_dim);
  return (slice / Expr(heads)) * Expr(t) * Expr(heads * head_dim) +
         (slice % Expr(heads)) * Expr(head_dim);
}

int64_t AttentionOp::output_row_stride() const {
  return packed_qkv ? heads * head_dim : head_dim;
}

std::vector<Expr> AttentionOp::q_index(const Expr& slice, const Expr& row, const Expr& d) const {
  if (!packed_qkv) return {slice, row, d};
  return {slice / Expr(heads), row, (slice % Expr(heads)) * Expr(head_dim) + d};
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
