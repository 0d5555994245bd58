#include "ops/dense.h"

#include "support/error.h"

namespace dietcode::ops {

Epilogue parse_epilogue(const std::string& text) {
  if (text == "none") return Epilogue::None;
  if (text == "bias") return Epilogue::Bias;
  if (text == "bias_relu") return Epilogue::BiasRelu;
  if (text == "bias_gelu") return Epilogue::BiasGelu;
  user_error("unknown epilogue '{}'; expected none, bias, bias_relu or bias_gelu", text);
}

const char* to_string(Epilogue e) {
  switch (e) {
    case Epilogue::None:
      return "none";
    case Epilogue::Bias:
      return "bias";
    case Epilogue::BiasRelu:
      return "bias_relu";
    case Epilogue::BiasGelu:
      return "bias_gelu";
  }
  return "?";
}

te::Operator dense(std::vector<te::ShapeVar> shape_vars, ir::Expr M, ir::Expr N, ir::Expr K,
                   Epilogue epilogue) {
  for (const ir::Expr* d : {&M, &N, &K}) {
    const int64_t* c = ir::as_const_int(*d);
    if (c && *c < 1) user_error("dense: dimension {} is not positive; extents must be >= 1", *c);
  }
  te::Input x = te::input("X", {M, K});
  te::Input w = te::input("W", {N, K}, /*constant=*/true);
  std::vector<te::Input> inputs{x, w};
  te::Input bias;
  if (epilogue != Epilogue::None) {
    bias = te::input("bias", {N}, /*constant=*/true);
    inputs.push_back(bias);
  }
  te::ComputeOp y = te::compute("Y", {M, N}, {"m", "n"}, [&](const std::vector<ir::Var>& ax) {
    ir::Var k("k");
    ir::Expr v =
        ir::reduce_sum(k, K, ir::load(x.tensor, {ax[0], k}) * ir::load(w.tensor, {ax[1], k}));
    if (epilogue != Epilogue::None) v = v + ir::load(bias.tensor, {ax[1]});
    if (epilogue == Epilogue::BiasRelu) v = ir::call(ir::CallOp::Relu, {v});
    if (epilogue == Epilogue::BiasGelu) v = ir::call(ir::CallOp::Gelu, {v});
    return v;
  });
  return te::Operator{"dense", std::move(shape_vars), std::move(inputs), std::move(y), {}};
}

te::Operator dense(int64_t m_min, int64_t m_max, int64_t N, int64_t K, Epilogue epilogue) {
  te::ShapeVar m = te::shape_var("M", m_min, m_max);
  ir::Expr m_expr = m.var;
  return dense({m}, m_expr, N, K, epilogue);
}

}  // namespace dietcode::ops
