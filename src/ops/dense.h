// dense: Y[M, N] = epilogue(X[M, K] * W[N, K]^T); W (and bias, scale) are constant.
#pragma once

#include <string>
#include <vector>

#include "te/tensor.h"

namespace dietcode::ops {

// One step of a dense layer's epilogue, applied to the value so far (the product first):
//   bias      v + bias[n]          input "bias" [N], constant
//   scale     v * scale[n]         input "scale" [N], constant
//   residual  v + residual[m, n]   input "residual" [M, N], the caller's (BERT's skip path)
//   relu, gelu (erf), gelu_tanh, tanh
enum class EpilogueStep { Bias, Scale, Residual, Relu, Gelu, GeluTanh, Tanh };

// The steps in order, written "none" or the steps joined by '+' ("bias+gelu",
// "bias+residual"); the names of the earlier fixed epilogues are shorthands
// ("bias_relu" = "bias+relu", "bias_gelu" = "bias+gelu"). Each input step at most once.
// The whole chain is one elementwise expression over the product, generated in vector
// form inside the micro-kernel's store (ops/contraction.h takes any such expression).
struct Epilogue {
  std::vector<EpilogueStep> steps;
  bool operator==(const Epilogue& o) const { return steps == o.steps; }
  bool none() const { return steps.empty(); }
  // Shorthands.
  static const Epilogue None, Bias, BiasRelu, BiasGelu;
};
inline const Epilogue Epilogue::None{};
inline const Epilogue Epilogue::Bias{{EpilogueStep::Bias}};
inline const Epilogue Epilogue::BiasRelu{{EpilogueStep::Bias, EpilogueStep::Relu}};
inline const Epilogue Epilogue::BiasGelu{{EpilogueStep::Bias, EpilogueStep::Gelu}};

// Throws dietcode::Error naming the unknown or repeated step.
Epilogue parse_epilogue(const std::string& text);
// "none" or the steps joined by '+'.
std::string to_string(const Epilogue& e);

// Any of M, N, K may be an expression of the given shape variables (M = batch * T)
// or a constant.
te::Operator dense(std::vector<te::ShapeVar> shape_vars, ir::Expr M, ir::Expr N, ir::Expr K,
                   const Epilogue& epilogue = Epilogue::None);

// The common case: M symbolic in [m_min, m_max], N and K fixed.
te::Operator dense(int64_t m_min, int64_t m_max, int64_t N, int64_t K,
                   const Epilogue& epilogue = Epilogue::None);

}  // namespace dietcode::ops
