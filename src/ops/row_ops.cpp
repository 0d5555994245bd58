#include "ops/row_ops.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "support/error.h"

namespace dietcode::ops {

using ir::Expr;
using ir::Var;

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::vector<std::string> parts;
  for (int64_t d : shape) parts.push_back(d == kM ? "M" : fmt::format("{}", d));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

// The shape variable M and dimension expressions; checks every dimension.
struct Dims {
  te::ShapeVar m;
  std::vector<Expr> of(const std::vector<int64_t>& shape, const char* op, const char* input) const {
    if (shape.empty())
      user_error("{}: input {} has no dimensions; expected at least one", op, input);
    std::vector<Expr> out;
    for (int64_t d : shape) {
      if (d != kM && d < 1)
        user_error("{}: input {} has dimension {} in {}; expected a positive extent or M", op,
                   input, d, shape_text(shape));
      out.push_back(d == kM ? Expr(m.var) : Expr(d));
    }
    return out;
  }
};

Dims dims(int64_t m_min, int64_t m_max) {
  return Dims{te::shape_var("M", m_min, m_max)};
}

// 1 / n as a float expression: folded for a constant n.
Expr reciprocal(const Expr& n) {
  if (const int64_t* c = ir::as_const_int(n)) return ir::make_float(1.0 / double(*c));
  return ir::make_float(1.0) / ir::call(ir::CallOp::ToFloat, {n});
}

// The axes of an output of rank `rank` read by an input of shape `shape` (right-aligned;
// a dimension of 1 is read at 0).
std::vector<Expr> broadcast_index(const std::vector<int64_t>& shape, const std::vector<Var>& axes) {
  std::vector<Expr> index;
  size_t offset = axes.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    index.push_back(shape[d] == 1 ? Expr(0) : Expr(axes[offset + d]));
  return index;
}

std::vector<std::string> axis_names(size_t rank) {
  std::vector<std::string> names;
  for (size_t d = 0; d < rank; ++d)
    names.push_back(d + 1 == rank ? std::string("j") : fmt::format("i{}", d));
  return names;
}

te::Operator unary(const char* name, int64_t m_min, int64_t m_max,
                   const std::vector<int64_t>& shape, ir::CallOp fn) {
  Dims d = dims(m_min, m_max);
  te::Input x = te::input("X", d.of(shape, name, "X"));
  te::ComputeOp y =
      te::compute("Y", x.tensor.shape(), axis_names(shape.size()), [&](const std::vector<Var>& ax) {
        return ir::call(fn, {ir::load(x.tensor, {ax.begin(), ax.end()})});
      });
  return te::Operator{name, {d.m}, {x}, y, {}};
}

// Stages mean and rstd of LayerNorm over rows of `n` of `row(i, j)`, and the output.
te::Operator layer_norm_of(const char* name, const Dims& d, int64_t n, double eps,
                           std::vector<te::Input> inputs,
                           const std::function<Expr(const Var&, const Expr&)>& row) {
  if (!(eps > 0) || !std::isfinite(eps))
    user_error("{}: eps = {}; expected a positive finite number", name, eps);
  if (n < 1) user_error("{}: row length N = {}; expected >= 1", name, n);
  te::Input gamma = te::input("gamma", {n}, /*constant=*/true);
  te::Input beta = te::input("beta", {n}, /*constant=*/true);
  Expr M = d.m.var, N = n;
  te::ComputeOp mean = te::row_stage("mean", {M}, {"i"}, [&](const std::vector<Var>& ax) {
    Var j("k");
    return ir::reduce_sum(j, N, row(ax[0], j)) * reciprocal(N);
  });
  auto centered = [&](const Var& i, const Expr& j) {
    return row(i, j) - ir::load(mean.output, {i});
  };
  te::ComputeOp rstd = te::row_stage("rstd", {M}, {"i"}, [&](const std::vector<Var>& ax) {
    Var j("k");
    Expr var = ir::reduce_sum(j, N, centered(ax[0], j) * centered(ax[0], j)) * reciprocal(N);
    return ir::make_float(1.0) / ir::call(ir::CallOp::Sqrt, {var + ir::make_float(eps)});
  });
  te::ComputeOp y = te::compute("Y", {M, N}, {"i", "j"}, [&](const std::vector<Var>& ax) {
    return centered(ax[0], ax[1]) * ir::load(rstd.output, {ax[0]}) *
               ir::load(gamma.tensor, {ax[1]}) +
           ir::load(beta.tensor, {ax[1]});
  });
  inputs.push_back(gamma);
  inputs.push_back(beta);
  return te::Operator{name, {d.m}, std::move(inputs), y, {mean, rstd}};
}

}  // namespace

te::Operator add(int64_t m_min, int64_t m_max, const std::vector<int64_t>& a_shape,
                 const std::vector<int64_t>& b_shape) {
  Dims d = dims(m_min, m_max);
  te::Input a = te::input("A", d.of(a_shape, "add", "A"));
  te::Input b = te::input("B", d.of(b_shape, "add", "B"));
  size_t rank = std::max(a_shape.size(), b_shape.size());
  std::vector<int64_t> out(rank);
  for (size_t k = 0; k < rank; ++k) {
    auto at = [&](const std::vector<int64_t>& s) {
      return k + s.size() >= rank ? s[k + s.size() - rank] : int64_t(1);
    };
    int64_t x = at(a_shape), y = at(b_shape);
    if (x == y || y == 1)
      out[k] = x;
    else if (x == 1)
      out[k] = y;
    else
      user_error(
          "add: input B of shape {} does not broadcast against input A of shape {} (dimension "
          "{} from the right: {} vs {}); expected equal extents or 1",
          shape_text(b_shape), shape_text(a_shape), rank - k,
          x == kM ? std::string("M") : std::to_string(x),
          y == kM ? std::string("M") : std::to_string(y));
  }
  te::ComputeOp y =
      te::compute("Y", d.of(out, "add", "Y"), axis_names(rank), [&](const std::vector<Var>& ax) {
        return ir::load(a.tensor, broadcast_index(a_shape, ax)) +
               ir::load(b.tensor, broadcast_index(b_shape, ax));
      });
  return te::Operator{"add", {d.m}, {a, b}, y, {}};
}

te::Operator gelu(int64_t m_min, int64_t m_max, const std::vector<int64_t>& shape) {
  return unary("gelu", m_min, m_max, shape, ir::CallOp::Gelu);
}

te::Operator gelu_tanh(int64_t m_min, int64_t m_max, const std::vector<int64_t>& shape) {
  return unary("gelu_tanh", m_min, m_max, shape, ir::CallOp::GeluTanh);
}

te::Operator softmax(int64_t m_min, int64_t m_max, const std::vector<int64_t>& shape) {
  Dims d = dims(m_min, m_max);
  te::Input x = te::input("X", d.of(shape, "softmax", "X"));
  std::vector<Expr> rows(x.tensor.shape().begin(), x.tensor.shape().end() - 1);
  Expr L = x.tensor.shape().back();
  std::vector<std::string> names = axis_names(shape.size());
  std::vector<std::string> row_names(names.begin(), names.end() - 1);
  auto at = [&](const std::vector<Var>& row_axes, const Expr& j) {
    std::vector<Expr> idx(row_axes.begin(), row_axes.end());
    idx.push_back(j);
    return ir::load(x.tensor, idx);
  };
  auto row_of = [](const std::vector<Var>& ax) { return std::vector<Expr>(ax.begin(), ax.end()); };
  te::ComputeOp mx = te::row_stage("row_max", rows, row_names, [&](const std::vector<Var>& ax) {
    Var j("k");
    return ir::reduce_max(j, L, at(ax, j));
  });
  te::ComputeOp inv = te::row_stage("inv_sum", rows, row_names, [&](const std::vector<Var>& ax) {
    Var j("k");
    Expr e = ir::call(ir::CallOp::Exp, {at(ax, j) - ir::load(mx.output, row_of(ax))});
    return ir::make_float(1.0) / ir::reduce_sum(j, L, e);
  });
  te::ComputeOp y = te::compute("Y", x.tensor.shape(), names, [&](const std::vector<Var>& ax) {
    std::vector<Var> row_axes(ax.begin(), ax.end() - 1);
    return ir::call(ir::CallOp::Exp,
                    {at(row_axes, ax.back()) - ir::load(mx.output, row_of(row_axes))}) *
           ir::load(inv.output, row_of(row_axes));
  });
  return te::Operator{"softmax", {d.m}, {x}, y, {mx, inv}};
}

te::Operator layer_norm(int64_t m_min, int64_t m_max, int64_t n, double eps) {
  Dims d = dims(m_min, m_max);
  te::Input x = te::input("X", {d.m.var, Expr(std::max<int64_t>(n, 1))});
  return layer_norm_of("layer_norm", d, n, eps, {x}, [&](const Var& i, const Expr& j) {
    return ir::load(x.tensor, {i, j});
  });
}

te::Operator add_layer_norm(int64_t m_min, int64_t m_max, int64_t n, double eps) {
  Dims d = dims(m_min, m_max);
  te::Input x = te::input("X", {d.m.var, Expr(std::max<int64_t>(n, 1))});
  te::Input r = te::input("residual", {d.m.var, Expr(std::max<int64_t>(n, 1))});
  return layer_norm_of("add_layer_norm", d, n, eps, {x, r}, [&](const Var& i, const Expr& j) {
    return ir::load(x.tensor, {i, j}) + ir::load(r.tensor, {i, j});
  });
}

}  // namespace dietcode::ops
