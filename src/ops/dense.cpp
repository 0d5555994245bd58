#include "ops/dense.h"

#include <algorithm>

#include "support/error.h"

namespace dietcode::ops {

namespace {

struct StepName {
  EpilogueStep step;
  const char* name;
};
constexpr StepName kSteps[] = {
    {EpilogueStep::Bias, "bias"},         {EpilogueStep::Scale, "scale"},
    {EpilogueStep::Residual, "residual"}, {EpilogueStep::Relu, "relu"},
    {EpilogueStep::Gelu, "gelu"},         {EpilogueStep::GeluTanh, "gelu_tanh"},
    {EpilogueStep::Tanh, "tanh"},
};

const char* step_name(EpilogueStep s) {
  for (const StepName& n : kSteps)
    if (n.step == s) return n.name;
  return "?";
}

bool is_input_step(EpilogueStep s) {
  return s == EpilogueStep::Bias || s == EpilogueStep::Scale || s == EpilogueStep::Residual;
}

}  // namespace

Epilogue parse_epilogue(const std::string& text) {
  if (text == "none") return Epilogue::None;
  if (text == "bias_relu") return Epilogue::BiasRelu;
  if (text == "bias_gelu") return Epilogue::BiasGelu;
  Epilogue e;
  size_t begin = 0;
  while (true) {
    size_t end = text.find('+', begin);
    std::string word =
        text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    const StepName* found = std::find_if(std::begin(kSteps), std::end(kSteps),
                                         [&](const StepName& n) { return word == n.name; });
    if (found == std::end(kSteps))
      user_error(
          "unknown epilogue '{}': '{}' is not a step; expected none, or steps joined by '+' "
          "from bias, scale, residual, relu, gelu, gelu_tanh, tanh (bias_relu and bias_gelu "
          "are shorthands)",
          text, word);
    if (is_input_step(found->step) && std::count(e.steps.begin(), e.steps.end(), found->step) > 0)
      user_error("epilogue '{}': {} appears twice (each input step at most once)", text, word);
    e.steps.push_back(found->step);
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return e;
}

std::string to_string(const Epilogue& e) {
  if (e.none()) return "none";
  std::string s;
  for (EpilogueStep step : e.steps) {
    if (!s.empty()) s += '+';
    s += step_name(step);
  }
  return s;
}

te::Operator dense(std::vector<te::ShapeVar> shape_vars, ir::Expr M, ir::Expr N, ir::Expr K,
                   const Epilogue& epilogue) {
  for (const ir::Expr* d : {&M, &N, &K}) {
    const int64_t* c = ir::as_const_int(*d);
    if (c && *c < 1) user_error("dense: dimension {} is not positive; extents must be >= 1", *c);
  }
  te::Input x = te::input("X", {M, K});
  te::Input w = te::input("W", {N, K}, /*constant=*/true);
  std::vector<te::Input> inputs{x, w};
  // Inputs of the epilogue's steps, in the order the steps name them.
  std::vector<te::Input> step_inputs;
  for (EpilogueStep step : epilogue.steps) {
    if (step == EpilogueStep::Bias) step_inputs.push_back(te::input("bias", {N}, true));
    if (step == EpilogueStep::Scale) step_inputs.push_back(te::input("scale", {N}, true));
    if (step == EpilogueStep::Residual) step_inputs.push_back(te::input("residual", {M, N}));
    if (is_input_step(step)) inputs.push_back(step_inputs.back());
  }
  te::ComputeOp y = te::compute("Y", {M, N}, {"m", "n"}, [&](const std::vector<ir::Var>& ax) {
    ir::Var k("k");
    ir::Expr v =
        ir::reduce_sum(k, K, ir::load(x.tensor, {ax[0], k}) * ir::load(w.tensor, {ax[1], k}));
    size_t next_input = 0;
    for (EpilogueStep step : epilogue.steps) {
      switch (step) {
        case EpilogueStep::Bias:
          v = v + ir::load(step_inputs[next_input++].tensor, {ax[1]});
          break;
        case EpilogueStep::Scale:
          v = v * ir::load(step_inputs[next_input++].tensor, {ax[1]});
          break;
        case EpilogueStep::Residual:
          v = v + ir::load(step_inputs[next_input++].tensor, {ax[0], ax[1]});
          break;
        case EpilogueStep::Relu:
          v = ir::call(ir::CallOp::Relu, {v});
          break;
        case EpilogueStep::Gelu:
          v = ir::call(ir::CallOp::Gelu, {v});
          break;
        case EpilogueStep::GeluTanh:
          v = ir::call(ir::CallOp::GeluTanh, {v});
          break;
        case EpilogueStep::Tanh:
          v = ir::call(ir::CallOp::Tanh, {v});
          break;
      }
    }
    return v;
  });
  return te::Operator{"dense", std::move(shape_vars), std::move(inputs), std::move(y), {}};
}

te::Operator dense(int64_t m_min, int64_t m_max, int64_t N, int64_t K, const Epilogue& epilogue) {
  te::ShapeVar m = te::shape_var("M", m_min, m_max);
  ir::Expr m_expr = m.var;
  return dense({m}, m_expr, N, K, epilogue);
}

}  // namespace dietcode::ops
