// dense: Y[M, N] = act(X[M, K] * W[N, K]^T + bias[N]); W (and bias) are constant.
#pragma once

#include <string>

#include "te/tensor.h"

namespace dietcode::ops {

enum class Epilogue { None, Bias, BiasRelu, BiasGelu };

// "none", "bias", "bias_relu", "bias_gelu"; throws dietcode::Error otherwise.
Epilogue parse_epilogue(const std::string& text);
const char* to_string(Epilogue e);

// Any of M, N, K may be an expression of the given shape variables (M = batch * T)
// or a constant.
te::Operator dense(std::vector<te::ShapeVar> shape_vars, ir::Expr M, ir::Expr N, ir::Expr K,
                   Epilogue epilogue = Epilogue::None);

// The common case: M symbolic in [m_min, m_max], N and K fixed.
te::Operator dense(int64_t m_min, int64_t m_max, int64_t N, int64_t K,
                   Epilogue epilogue = Epilogue::None);

}  // namespace dietcode::ops
