#include "te/tensor.h"

#include "ir/printer.h"
#include "support/error.h"

namespace dietcode::te {

ShapeVar shape_var(const std::string& name, int64_t min, int64_t max,
                   std::vector<WeightedInstance> instances) {
  if (min < 1) user_error("shape variable {}: lower bound {} must be >= 1", name, min);
  if (max < min) user_error("shape variable {}: range [{}, {}] is empty", name, min, max);
  for (const WeightedInstance& w : instances) {
    if (w.value < min || w.value > max)
      user_error("shape variable {}: instance {} is outside its range [{}, {}]", name, w.value, min,
                 max);
    if (!(w.weight > 0))
      user_error("shape variable {}: instance {} has weight {}; expected > 0", name, w.value,
                 w.weight);
  }
  return ShapeVar{ir::Var(name), min, max, std::move(instances)};
}

Input input(const std::string& name, std::vector<ir::Expr> shape, bool constant) {
  return Input{ir::Buffer(name, std::move(shape)), constant};
}

ComputeOp compute(const std::string& name, std::vector<ir::Expr> shape,
                  const std::vector<std::string>& axis_names,
                  const std::function<ir::Expr(const std::vector<ir::Var>&)>& body) {
  DC_INTERNAL_CHECK(axis_names.size() == shape.size(), "compute {}: one axis name per dimension",
                    name);
  std::vector<ir::Var> axes;
  for (const std::string& n : axis_names) axes.emplace_back(n);
  ir::Expr value = body(axes);
  DC_INTERNAL_CHECK(value.type() == ir::Type::Float, "compute {} must produce a float", name);
  return ComputeOp{ir::Buffer(name, std::move(shape)), std::move(axes), std::move(value)};
}

void Operator::check_shape(const std::vector<int64_t>& shape, bool strict) const {
  if (shape.size() != shape_vars.size())
    user_error("operator {}: got {} shape values, expected {} (one per shape variable)", name,
               shape.size(), shape_vars.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    const ShapeVar& v = shape_vars[i];
    if (shape[i] < 1)
      user_error("operator {}: {} = {} is not a valid extent; expected >= 1", name, v.var.name(),
                 shape[i]);
    if (strict && (shape[i] < v.min || shape[i] > v.max))
      user_error(
          "operator {}: {} = {} is outside its declared range [{}, {}] (strict ranges "
          "requested)",
          name, v.var.name(), shape[i], v.min, v.max);
  }
}

ir::Bindings Operator::bind(const std::vector<int64_t>& shape, bool strict) const {
  check_shape(shape, strict);
  ir::Bindings bindings;
  for (size_t i = 0; i < shape.size(); ++i) bindings[shape_vars[i].var.get()] = shape[i];
  return bindings;
}

std::vector<int64_t> Operator::buffer_sizes(const ir::Bindings& bindings) const {
  std::vector<int64_t> sizes;
  for (const Input& in : inputs)
    sizes.push_back(ir::evaluate_int(ir::element_count(in.tensor), bindings));
  sizes.push_back(ir::evaluate_int(ir::element_count(compute.output), bindings));
  return sizes;
}

std::string Operator::describe() const {
  auto shape_text = [](const ir::Buffer& b) {
    std::string s;
    for (size_t i = 0; i < b.rank(); ++i) s += (i ? ", " : "") + ir::to_string(b.shape()[i]);
    return s;
  };
  std::string out = "operator " + name + "\n";
  for (const ShapeVar& v : shape_vars)
    out += fmt::format("  shape var {} in [{}, {}]\n", v.var.name(), v.min, v.max);
  for (const Input& in : inputs)
    out += fmt::format("  input {}[{}]{}\n", in.tensor.name(), shape_text(in.tensor),
                       in.constant ? " (constant)" : "");
  auto define = [&](const ComputeOp& c, const char* what) {
    std::string axes;
    for (size_t i = 0; i < c.axes.size(); ++i) axes += (i ? ", " : "") + c.axes[i].name();
    out += fmt::format("  {}{}[{}] = {}   for {}[{}]\n", what, c.output.name(), axes,
                       ir::to_string(c.body), c.output.name(), shape_text(c.output));
  };
  for (const ComputeOp& stage : stages) define(stage, "stage ");
  define(compute, "");
  return out;
}

}  // namespace dietcode::te
