#include "reference/reference.h"

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <unordered_map>

#include "ir/visit.h"
#include "support/error.h"

namespace dietcode::reference {

using namespace ir;

namespace {

using Slots = std::vector<int64_t>;
using IntFn = std::function<int64_t(Slots&)>;
using RealFn = std::function<double(Slots&)>;

// Turns expressions into closures once, so the per-element cost is a few calls.
class Compiler {
 public:
  Compiler(const te::Operator& op, const std::vector<const float*>& inputs) {
    for (size_t i = 0; i < op.inputs.size(); ++i) data_[op.inputs[i].tensor.get()] = inputs[i];
  }
  int slot(const Var& v) {
    auto [it, inserted] = slots_.emplace(v.get(), static_cast<int>(slots_.size()));
    return it->second;
  }
  size_t slot_count() const { return slots_.size(); }
  // Loads of `buffer` read `values` (a row stage's results, filled before they are read).
  void add_stage(const Buffer& buffer, const std::vector<double>* values) {
    stages_[buffer.get()] = values;
  }

  IntFn integer(const Expr& e) {
    if (const int64_t* c = as_const_int(e)) return [v = *c](Slots&) { return v; };
    if (const auto* v = e.as<VarNode>()) {
      auto it = slots_.find(v);
      DC_INTERNAL_CHECK(it != slots_.end(), "reference: unbound variable {}", v->name);
      return [s = it->second](Slots& x) { return x[s]; };
    }
    const BinaryNode* b = as_binary(e);
    DC_INTERNAL_CHECK(b, "reference: unsupported integer expression");
    IntFn x = integer(b->a), y = integer(b->b);
    switch (e.kind()) {
      case ExprKind::Add:
        return [x, y](Slots& s) { return x(s) + y(s); };
      case ExprKind::Sub:
        return [x, y](Slots& s) { return x(s) - y(s); };
      case ExprKind::Mul:
        return [x, y](Slots& s) { return x(s) * y(s); };
      case ExprKind::Div:
        return [x, y](Slots& s) { return floor_div(x(s), y(s)); };
      case ExprKind::Mod:
        return [x, y](Slots& s) { return floor_mod(x(s), y(s)); };
      case ExprKind::Min:
        return [x, y](Slots& s) { return std::min(x(s), y(s)); };
      case ExprKind::Max:
        return [x, y](Slots& s) { return std::max(x(s), y(s)); };
      default:
        internal_error(__FILE__, __LINE__, "reference: unsupported integer operator");
    }
  }

  // A condition: comparisons of floats or of indices, and their conjunction.
  std::function<bool(Slots&)> boolean(const Expr& e) {
    const BinaryNode* b = as_binary(e);
    DC_INTERNAL_CHECK(b, "reference: unsupported condition");
    if (e.kind() == ExprKind::And)
      return [x = boolean(b->a), y = boolean(b->b)](Slots& s) { return x(s) && y(s); };
    auto compare = [&](auto x, auto y) -> std::function<bool(Slots&)> {
      switch (e.kind()) {
        case ExprKind::LT:
          return [x, y](Slots& s) { return x(s) < y(s); };
        case ExprKind::LE:
          return [x, y](Slots& s) { return x(s) <= y(s); };
        case ExprKind::EQ:
          return [x, y](Slots& s) { return x(s) == y(s); };
        default:
          internal_error(__FILE__, __LINE__, "reference: unsupported condition");
      }
    };
    if (b->a.type() == Type::Int) return compare(integer(b->a), integer(b->b));
    return compare(real(b->a), real(b->b));
  }

  RealFn real(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::Select: {
        const auto* sel = e.as<SelectNode>();
        return [c = boolean(sel->condition), t = real(sel->true_value),
                f = real(sel->false_value)](Slots& s) { return c(s) ? t(s) : f(s); };
      }
      case ExprKind::FloatImm:
        return [v = e.as<FloatImmNode>()->value](Slots&) { return v; };
      case ExprKind::Load: {
        const auto* l = e.as<LoadNode>();
        IntFn index = integer(flatten_index(l->buffer, l->indices));
        if (auto st = stages_.find(l->buffer.get()); st != stages_.end())
          return [p = st->second, index](Slots& s) { return (*p)[index(s)]; };
        auto it = data_.find(l->buffer.get());
        DC_INTERNAL_CHECK(it != data_.end(), "reference: {} is not an input", l->buffer.name());
        return [p = it->second, index](Slots& s) { return static_cast<double>(p[index(s)]); };
      }
      case ExprKind::Call: {
        const auto* c = e.as<CallNode>();
        if (c->op == CallOp::ToFloat)
          return [n = integer(c->args[0])](Slots& s) { return static_cast<double>(n(s)); };
        RealFn x = real(c->args[0]);
        switch (c->op) {
          case CallOp::Relu:
            return [x](Slots& s) { return std::max(x(s), 0.0); };
          case CallOp::Exp:
            return [x](Slots& s) { return std::exp(x(s)); };
          case CallOp::Sqrt:
            return [x](Slots& s) { return std::sqrt(x(s)); };
          case CallOp::Tanh:
            return [x](Slots& s) { return std::tanh(x(s)); };
          case CallOp::GeluTanh:
            return [x](Slots& s) {
              double v = x(s);
              return 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
            };
          default:
            return [x](Slots& s) {
              double v = x(s);
              return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
            };
        }
      }
      case ExprKind::Reduce: {
        const auto* r = e.as<ReduceNode>();
        IntFn extent = integer(r->extent);
        int k = slot(r->axis);
        if (RealFn dot = dot_product(*r, extent, k)) return dot;
        RealFn body = real(r->body);
        if (r->op == ReduceOp::Max)
          return [extent, k, body](Slots& s) {
            double m = -std::numeric_limits<double>::infinity();
            int64_t n = extent(s);
            for (s[k] = 0; s[k] < n; ++s[k]) m = std::max(m, body(s));
            return m;
          };
        return [extent, k, body](Slots& s) {
          double sum = 0;
          int64_t n = extent(s);
          for (s[k] = 0; s[k] < n; ++s[k]) sum += body(s);
          return sum;
        };
      }
      case ExprKind::Add:
      case ExprKind::Sub:
      case ExprKind::Mul:
      case ExprKind::Div:
      case ExprKind::Min:
      case ExprKind::Max: {
        const BinaryNode* b = as_binary(e);
        RealFn x = real(b->a), y = real(b->b);
        switch (e.kind()) {
          case ExprKind::Add:
            return [x, y](Slots& s) { return x(s) + y(s); };
          case ExprKind::Sub:
            return [x, y](Slots& s) { return x(s) - y(s); };
          case ExprKind::Mul:
            return [x, y](Slots& s) { return x(s) * y(s); };
          case ExprKind::Div:
            return [x, y](Slots& s) { return x(s) / y(s); };
          case ExprKind::Min:
            return [x, y](Slots& s) { return std::min(x(s), y(s)); };
          default:
            return [x, y](Slots& s) { return std::max(x(s), y(s)); };
        }
      }
      default:
        internal_error(__FILE__, __LINE__, "reference: unsupported float expression");
    }
  }

 private:
  // An index affine in the reduction variable k: base (k's term dropped) + stride * k,
  // both evaluated once per reduction. Empty when k appears under a non-affine operator.
  struct Affine {
    IntFn base, stride;
  };
  std::optional<Affine> affine_in(const Expr& e, const VarNode* k) {
    bool has_k = false;
    visit_exprs(e, [&](const Expr& x) { has_k = has_k || x.get() == k; });
    if (!has_k) return Affine{integer(e), [](Slots&) { return int64_t(0); }};
    if (e.get() == k)
      return Affine{[](Slots&) { return int64_t(0); }, [](Slots&) { return int64_t(1); }};
    const BinaryNode* b = as_binary(e);
    if (!b) return std::nullopt;
    if (e.kind() == ExprKind::Add || e.kind() == ExprKind::Sub) {
      auto x = affine_in(b->a, k), y = affine_in(b->b, k);
      if (!x || !y) return std::nullopt;
      int64_t sign = e.kind() == ExprKind::Add ? 1 : -1;
      return Affine{
          [xb = x->base, yb = y->base, sign](Slots& s) { return xb(s) + sign * yb(s); },
          [xs = x->stride, ys = y->stride, sign](Slots& s) { return xs(s) + sign * ys(s); }};
    }
    if (e.kind() == ExprKind::Mul) {
      // One factor free of k (the other affine): c * (base + stride k).
      for (auto [c, v] : {std::pair{b->a, b->b}, std::pair{b->b, b->a}}) {
        auto cf = affine_in(c, k);
        auto vf = affine_in(v, k);
        if (!cf || !vf) continue;
        bool c_free = true;
        visit_exprs(c, [&](const Expr& x) { c_free = c_free && x.get() != k; });
        if (!c_free) continue;
        return Affine{[cb = cf->base, vb = vf->base](Slots& s) { return cb(s) * vb(s); },
                      [cb = cf->base, vs = vf->stride](Slots& s) { return cb(s) * vs(s); }};
      }
    }
    return std::nullopt;
  }

  // The contraction's reduction, sum over k of input[..k..] * input[..k..] with affine
  // indices, as one loop over strided pointers: the same float64 products summed in the
  // same order as the general closures, without their per-element calls. Empty when the
  // reduction has another form.
  RealFn dot_product(const ReduceNode& r, const IntFn& extent, int k) {
    if (r.op != ReduceOp::Sum || r.body.kind() != ExprKind::Mul) return nullptr;
    const BinaryNode* mul = as_binary(r.body);
    const auto* la = mul->a.as<LoadNode>();
    const auto* lb = mul->b.as<LoadNode>();
    if (!la || !lb) return nullptr;
    auto da = data_.find(la->buffer.get()), db = data_.find(lb->buffer.get());
    if (da == data_.end() || db == data_.end()) return nullptr;
    const VarNode* kv = r.axis.get();
    auto ia = affine_in(flatten_index(la->buffer, la->indices), kv);
    auto ib = affine_in(flatten_index(lb->buffer, lb->indices), kv);
    if (!ia || !ib) return nullptr;
    return [extent, k, pa = da->second, pb = db->second, a = *ia, b = *ib](Slots& s) {
      int64_t n = extent(s);
      const int64_t a0 = a.base(s), as = a.stride(s), b0 = b.base(s), bs = b.stride(s);
      double sum = 0;
      for (int64_t i = 0; i < n; ++i)
        sum += static_cast<double>(pa[a0 + as * i]) * static_cast<double>(pb[b0 + bs * i]);
      s[k] = n;
      return sum;
    };
  }

  std::unordered_map<const VarNode*, int> slots_;
  std::unordered_map<const BufferNode*, const float*> data_;
  std::unordered_map<const BufferNode*, const std::vector<double>*> stages_;
};

}  // namespace

namespace {

// Evaluates the output elements at the given flat (row-major) indices, or all of them
// when `at` is null.
std::vector<double> evaluate_impl(const te::Operator& op, const std::vector<int64_t>& shape,
                                  const std::vector<const float*>& inputs,
                                  const std::vector<int64_t>* at) {
  DC_INTERNAL_CHECK(inputs.size() == op.inputs.size(), "reference: input count");
  Bindings bindings = op.bind(shape);
  Compiler compiler(op, inputs);
  for (const te::ShapeVar& v : op.shape_vars) compiler.slot(v.var);
  // Row stages are evaluated whole, in order, before the output reads them.
  std::vector<std::vector<double>> stage_values(op.stages.size());
  for (size_t i = 0; i < op.stages.size(); ++i) {
    const te::ComputeOp& stage = op.stages[i];
    std::vector<int> slots_of_axes;
    std::vector<int64_t> stage_extents;
    int64_t count = 1;
    for (size_t d = 0; d < stage.axes.size(); ++d) {
      slots_of_axes.push_back(compiler.slot(stage.axes[d]));
      stage_extents.push_back(evaluate_int(stage.output.shape()[d], bindings));
      count *= stage_extents.back();
    }
    RealFn value = compiler.real(stage.body);
    Slots slots(compiler.slot_count() + 16, 0);
    for (const te::ShapeVar& v : op.shape_vars)
      slots[compiler.slot(v.var)] = bindings.at(v.var.get());
    stage_values[i].resize(static_cast<size_t>(count));
    for (int64_t flat = 0; flat < count; ++flat) {
      int64_t rest = flat;
      for (size_t d = stage_extents.size(); d-- > 0;) {
        slots[slots_of_axes[d]] = rest % stage_extents[d];
        rest /= stage_extents[d];
      }
      stage_values[i][flat] = value(slots);
    }
    compiler.add_stage(stage.output, &stage_values[i]);
  }
  const te::ComputeOp& comp = op.compute;
  std::vector<int> axis_slots;
  std::vector<int64_t> extents;
  for (size_t i = 0; i < comp.axes.size(); ++i) {
    axis_slots.push_back(compiler.slot(comp.axes[i]));
    extents.push_back(evaluate_int(comp.output.shape()[i], bindings));
  }
  RealFn body = compiler.real(comp.body);
  Slots slots(compiler.slot_count() + 16, 0);
  for (const te::ShapeVar& v : op.shape_vars)
    slots[compiler.slot(v.var)] = bindings.at(v.var.get());
  int64_t total = 1;
  for (int64_t e : extents) total *= e;
  auto element = [&](int64_t flat) {
    for (size_t d = extents.size(); d-- > 0;) {
      slots[axis_slots[d]] = flat % extents[d];
      flat /= extents[d];
    }
    return body(slots);
  };
  std::vector<double> out;
  if (at) {
    for (int64_t flat : *at) {
      DC_INTERNAL_CHECK(flat >= 0 && flat < total, "reference: element {} out of range", flat);
      out.push_back(element(flat));
    }
  } else {
    out.resize(static_cast<size_t>(total));
    for (int64_t flat = 0; flat < total; ++flat) out[flat] = element(flat);
  }
  return out;
}

}  // namespace

std::vector<double> evaluate(const te::Operator& op, const std::vector<int64_t>& shape,
                             const std::vector<const float*>& inputs) {
  return evaluate_impl(op, shape, inputs, nullptr);
}

std::vector<double> evaluate_at(const te::Operator& op, const std::vector<int64_t>& shape,
                                const std::vector<const float*>& inputs,
                                const std::vector<int64_t>& flat_indices) {
  return evaluate_impl(op, shape, inputs, &flat_indices);
}

double relative_error(const float* got, const std::vector<double>& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return std::numeric_limits<double>::quiet_NaN();
    double d = static_cast<double>(got[i]) - want[i];
    diff += d * d;
    norm += want[i] * want[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

}  // namespace dietcode::reference
