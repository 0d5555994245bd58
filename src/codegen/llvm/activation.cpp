#include "codegen/llvm/activation.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include <cmath>

#include "support/error.h"

namespace dietcode::codegen {

llvm::Value* emit_relu(llvm::IRBuilder<>& b, llvm::Value* x) {
  return b.CreateMaxNum(x, llvm::Constant::getNullValue(x->getType()));
}

llvm::Value* emit_gelu(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  llvm::Module* m = b.GetInsertBlock()->getModule();
  auto c = [&](double v) { return llvm::ConstantFP::get(type, v); };
  llvm::Function* fma = llvm::Intrinsic::getDeclaration(m, llvm::Intrinsic::fma, {type});
  auto horner = [&](std::initializer_list<double> highest_first, llvm::Value* a) {
    const double* coef = highest_first.begin();
    llvm::Value* v = c(*coef);
    while (++coef != highest_first.end()) v = b.CreateCall(fma, {v, a, c(*coef)});
    return v;
  };
  // erfc(a) ~ P(a) / Q(a) for 0 <= a < 4 (scripts/fit_erf.cpp: near-minimax in absolute
  // error, 1.5e-8 with these float coefficients in exact arithmetic); erfc(a) < 1.6e-8 beyond.
  llvm::Value* z = b.CreateFMul(x, c(0.70710678118654752));
  llvm::Value* a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, z);
  llvm::Value* p = horner(
      {-1.347638667e-03, 2.496133558e-02, -1.859703958e-01, 6.970667243e-01, -1.315270424e+00, 1.0},
      a);
  llvm::Value* q =
      horner({1.469410723e-03, -4.007937852e-03, 1.276650093e-02, -4.182822071e-03, 2.510767244e-02,
              7.763600349e-02, -1.298122946e-02, 4.861269593e-01, -1.868890226e-01, 1.0},
             a);
  // Past the fitted range (and for NaN) the quotient is not used: erfc = 0.
  llvm::Value* erfc_a = b.CreateSelect(b.CreateFCmpOLT(a, c(4.0)), b.CreateFDiv(p, q), c(0.0));
  // 1 + erf(z) = erfc(-z): erfc(a) for z < 0, 2 - erfc(a) otherwise.
  llvm::Value* one_plus_erf =
      b.CreateSelect(b.CreateFCmpOLT(z, c(0.0)), erfc_a, b.CreateFSub(c(2.0), erfc_a));
  return b.CreateFMul(b.CreateFMul(x, c(0.5)), one_plus_erf);
}

llvm::Value* emit_exp(llvm::IRBuilder<>& b, llvm::Value* x_in) {
  llvm::Type* type = x_in->getType();
  llvm::Module* m = b.GetInsertBlock()->getModule();
  auto c = [&](double v) { return llvm::ConstantFP::get(type, v); };
  llvm::Function* fma = llvm::Intrinsic::getDeclaration(m, llvm::Intrinsic::fma, {type});
  constexpr double kLow = -87.33654475, kHigh = 88.72283935;  // exp: FLT_MIN .. FLT_MAX
  llvm::Value* x = b.CreateMinNum(b.CreateMaxNum(x_in, c(kLow)), c(kHigh));
  // n = round(x / ln 2); r = x - n ln 2 in two steps so that r keeps its low bits.
  llvm::Value* n =
      b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b.CreateFMul(x, c(1.44269504088896341)));
  llvm::Value* r = b.CreateCall(fma, {n, c(-0.693359375), x});
  r = b.CreateCall(fma, {n, c(2.12194440e-4), r});
  llvm::Value* p = c(1.9875691500e-4);
  for (double coef :
       {1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1})
    p = b.CreateCall(fma, {p, r, c(coef)});
  // exp(r) ~ 1 + r + r^2 p(r)
  llvm::Value* er = b.CreateFAdd(b.CreateCall(fma, {p, b.CreateFMul(r, r), r}), c(1.0));
  // 2^n as 2^(n/2) 2^(n - n/2): n is in [-126, 128], each factor a normal float.
  llvm::Type* int_type =
      type->isVectorTy()
          ? llvm::VectorType::get(b.getInt32Ty(),
                                  llvm::cast<llvm::VectorType>(type)->getElementCount())
          : static_cast<llvm::Type*>(b.getInt32Ty());
  auto i = [&](int v) { return llvm::ConstantInt::get(int_type, v); };
  llvm::Value* ni = b.CreateFPToSI(n, int_type);
  llvm::Value* n1 = b.CreateAShr(ni, i(1));
  llvm::Value* n2 = b.CreateSub(ni, n1);
  auto pow2 = [&](llvm::Value* e) {
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, i(127)), i(23)), type);
  };
  llvm::Value* y = b.CreateFMul(b.CreateFMul(er, pow2(n1)), pow2(n2));
  // Outside the range: 0 below (no denormals), infinity above, NaN stays NaN.
  y = b.CreateSelect(b.CreateFCmpOLT(x_in, c(kLow)), c(0.0), y);
  y = b.CreateSelect(b.CreateFCmpOGT(x_in, c(kHigh)), c(INFINITY), y);
  return b.CreateSelect(b.CreateFCmpUNO(x_in, x_in), x_in, y);
}

llvm::Value* emit_gelu_tanh(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(type, v); };
  // -2u = -2 sqrt(2/pi) (x + 0.044715 x^3)
  llvm::Value* x3 = b.CreateFMul(b.CreateFMul(x, x), x);
  llvm::Value* inner = b.CreateFAdd(x, b.CreateFMul(x3, c(0.044715)));
  llvm::Value* e = emit_exp(b, b.CreateFMul(inner, c(-1.5957691216057308)));
  return b.CreateFDiv(x, b.CreateFAdd(e, c(1.0)));
}

llvm::Value* emit_float_call(llvm::IRBuilder<>& b, ir::CallOp op, llvm::Value* x) {
  switch (op) {
    case ir::CallOp::Relu:
      return emit_relu(b, x);
    case ir::CallOp::Gelu:
      return emit_gelu(b, x);
    case ir::CallOp::GeluTanh:
      return emit_gelu_tanh(b, x);
    case ir::CallOp::Exp:
      return emit_exp(b, x);
    case ir::CallOp::Sqrt:
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
    case ir::CallOp::ToFloat:
      break;
  }
  DC_INTERNAL_CHECK(false, "{} is not a float function", ir::to_string(op));
  return nullptr;
}

}  // namespace dietcode::codegen
