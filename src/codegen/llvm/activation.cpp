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
  // erfc(a) ~ P(a) / Q(a) for 0 <= a < 4 (scripts/fit_approximations.cpp: near-minimax
  // in absolute error, 1.5e-8 with these float coefficients in exact arithmetic);
  // erfc(a) < 1.6e-8 beyond.
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

llvm::Value* emit_exp(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  llvm::Module* m = b.GetInsertBlock()->getModule();
  auto c = [&](double v) { return llvm::ConstantFP::get(type, v); };
  llvm::Function* fma = llvm::Intrinsic::getDeclaration(m, llvm::Intrinsic::fma, {type});
  llvm::Type* int_type =
      type->isVectorTy()
          ? llvm::VectorType::get(b.getInt32Ty(),
                                  llvm::cast<llvm::VectorType>(type)->getElementCount())
          : static_cast<llvm::Type*>(b.getInt32Ty());
  // n = round(x / ln 2) by adding 1.5 * 2^23: the sum's low mantissa bits are n (two's
  // complement), with no float-to-int conversion (which would be poison for NaN).
  constexpr double kShifter = 12582912.0;  // 1.5 * 2^23
  llvm::Value* shifted = b.CreateCall(fma, {x, c(1.44269504088896341), c(kShifter)});
  llvm::Value* n = b.CreateFSub(shifted, c(kShifter));
  // r = x - n ln 2 in two steps so that r keeps its low bits.
  llvm::Value* r = b.CreateCall(fma, {n, c(-0.693359375), x});
  r = b.CreateCall(fma, {n, c(2.12194440e-4), r});
  // exp(r), |r| <= ln(2)/2: degree 5, near-minimax in relative error
  // (scripts/fit_approximations.cpp exp 5).
  llvm::Value* er = c(8.290315047e-03);
  for (double coef : {4.189793020e-02, 1.666763574e-01, 4.999915063e-01, 9.999997020e-01, 1.0})
    er = b.CreateCall(fma, {er, r, c(coef)});
  // exp(r) 2^n: n added to er's exponent field (the low bits of `shifted`, moved there,
  // are n << 23). er is in [0.7, 1.42], so inside the range the exponent stays valid:
  // n = 128 only with er < 1, n = -126 only with er >= 1 (up to rounding near FLT_MIN,
  // where the result is a near-exact denormal).
  llvm::Value* exponent =
      b.CreateShl(b.CreateBitCast(shifted, int_type), llvm::ConstantInt::get(int_type, 23));
  llvm::Value* y = b.CreateBitCast(b.CreateAdd(b.CreateBitCast(er, int_type), exponent), type);
  // Outside the range (where y is garbage): 0 below (no denormals); above, x + inf, which
  // is infinity, or NaN for NaN (UGT: true for NaN).
  constexpr double kLow = -87.33654475;        // ln(FLT_MIN)
  constexpr double kHigh = 88.72283172607422;  // the float below ln(FLT_MAX)
  y = b.CreateSelect(b.CreateFCmpOLT(x, c(kLow)), c(0.0), y);
  return b.CreateSelect(b.CreateFCmpUGT(x, c(kHigh)), b.CreateFAdd(x, c(INFINITY)), y);
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

llvm::Value* emit_tanh(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(type, v); };
  llvm::Value* ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  // |x| >= 0.4: (1 - e) / (1 + e) with e = exp(-2|x|) >= exp(-2 |x|max) (no cancellation
  // worse than 1 - exp(-0.8) = 0.55), the sign copied from x; exp's flush to 0 below
  // -87 gives exactly 1 for large |x|.
  llvm::Value* e = emit_exp(b, b.CreateFMul(ax, c(-2.0)));
  llvm::Value* big = b.CreateFDiv(b.CreateFSub(c(1.0), e), b.CreateFAdd(c(1.0), e));
  big = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, big, x);
  // |x| < 0.4: the odd Taylor series through x^13 (truncation error below 6e-8 relative).
  llvm::Value* x2 = b.CreateFMul(x, x);
  llvm::Value* p = c(21844.0 / 6081075.0);
  for (double coef : {-1382.0 / 155925.0, 62.0 / 2835.0, -17.0 / 315.0, 2.0 / 15.0, -1.0 / 3.0})
    p = b.CreateFAdd(b.CreateFMul(p, x2), c(coef));
  llvm::Value* small = b.CreateFAdd(x, b.CreateFMul(b.CreateFMul(p, x2), x));
  return b.CreateSelect(b.CreateFCmpOLT(ax, c(0.4)), small, big);
}

llvm::Value* emit_float_call(llvm::IRBuilder<>& b, ir::CallOp op, llvm::Value* x) {
  switch (op) {
    case ir::CallOp::Relu:
      return emit_relu(b, x);
    case ir::CallOp::Gelu:
      return emit_gelu(b, x);
    case ir::CallOp::GeluTanh:
      return emit_gelu_tanh(b, x);
    case ir::CallOp::Tanh:
      return emit_tanh(b, x);
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
