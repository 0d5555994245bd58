// The activations an epilogue applies, as LLVM IR, one definition for the scalar code
// (codegen_llvm.cpp) and the vector register tile (micro_kernel_emitter.cpp) alike:
// `x` may be a float or a vector of floats, and the result has its type.
#pragma once

#include <llvm/IR/IRBuilder.h>

#include "ir/expr.h"

namespace dietcode::codegen {

// max(x, 0).
llvm::Value* emit_relu(llvm::IRBuilder<>& b, llvm::Value* x);

// gelu(x) = 0.5 x (1 + erf(x / sqrt 2)), with 1 + erf(z) = erfc(-z) and erfc(|z|) one
// rational function P(a) / Q(a) (degrees 5 and 9, fitted on [0, 4] by
// scripts/fit_approximations.cpp; 0 beyond): no exp, one division, and 1 + erf(z) for
// z < 0 computed without cancellation. Branch-free.
// Accuracy in float against the exact GELU (double-precision std::erf), measured by
// tests/codegen/gelu_test.cpp over x in [-10, 10] in steps of 2^-12: absolute error at
// most 4.0e-7 everywhere; relative error at most 1.8e-7 for x > 0 and 3.5e-5 wherever
// |gelu(x)| >= 1e-3 (x >= -3.44); beyond, in the negative tail where |gelu(x)| < 1e-3,
// the relative error grows (to 100% for x < -5.66, where erfc is taken as 0 and
// |gelu(x)| < 4.4e-8).
llvm::Value* emit_gelu(llvm::IRBuilder<>& b, llvm::Value* x);

// exp(x), branch-free and vectorizable (llvm.exp on a vector would be scalarized into
// libm calls): x = n ln 2 + r with |r| <= ln(2)/2 (n rounded by the 1.5 * 2^23 shifter,
// r by Cody-Waite with a two-part ln 2), a degree-5 polynomial for exp(r) (fitted by
// scripts/fit_approximations.cpp), n added into the result's exponent field. Below -87.34
// (where exp(x) < FLT_MIN) the result is 0; above 88.7228 it is infinity;
// NaN stays NaN. 16 vector instructions. Maximum relative error 1.6e-7 over [-87, 88.7]
// (tests/rowops/row_ops_test.cpp).
llvm::Value* emit_exp(llvm::IRBuilder<>& b, llvm::Value* x);

// gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), computed as
// x / (1 + exp(-2u)) (the same function, without cancellation for u << 0) with emit_exp.
llvm::Value* emit_gelu_tanh(llvm::IRBuilder<>& b, llvm::Value* x);

// tanh(x): a Taylor polynomial for |x| < 0.4, (1 - e) / (1 + e) with e = emit_exp(-2|x|)
// beyond (sign restored); NaN stays NaN. Accuracy in tests/codegen/epilogue_test.cpp.
llvm::Value* emit_tanh(llvm::IRBuilder<>& b, llvm::Value* x);

// The IR's float function `op` (every CallOp but ToFloat, whose argument is an integer)
// applied to `x`, a float or a vector of floats: the one mapping from CallOp to the
// builders above, for the scalar and the vector code generators.
llvm::Value* emit_float_call(llvm::IRBuilder<>& b, ir::CallOp op, llvm::Value* x);

}  // namespace dietcode::codegen
