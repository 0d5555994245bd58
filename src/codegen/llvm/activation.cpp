#include "codegen/llvm/activation.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

namespace dietcode::codegen {

llvm::Value* emit_relu(llvm::IRBuilder<>& b, llvm::Value* x) {
  return b.CreateMaxNum(x, llvm::Constant::getNullValue(x->getType()));
}

llvm::Value* emit_gelu(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* type = x->getType();
  llvm::Module* m = b.GetInsertBlock()->getModule();
  auto c = [&](double v) { return llvm::ConstantFP::get(type, v); };
  llvm::Function* fma = llvm::Intrinsic::getDeclaration(m, llvm::Intrinsic::fma, {type});
  // erfc(a) ~ t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) exp(-a^2), t = 1 / (1 + p a), a >= 0.
  llvm::Value* z = b.CreateFMul(x, c(0.70710678118654752));
  llvm::Value* a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, z);
  llvm::Value* t = b.CreateFDiv(c(1.0), b.CreateCall(fma, {c(0.3275911), a, c(1.0)}));
  llvm::Value* poly = c(1.061405429);
  for (double coef : {-1.453152027, 1.421413741, -0.284496736, 0.254829592})
    poly = b.CreateCall(fma, {poly, t, c(coef)});
  llvm::Value* e = b.CreateUnaryIntrinsic(llvm::Intrinsic::exp, b.CreateFNeg(b.CreateFMul(a, a)));
  llvm::Value* erfc_a = b.CreateFMul(b.CreateFMul(poly, t), e);
  // 1 + erf(z) = erfc(-z): erfc(a) for z < 0, 2 - erfc(a) otherwise.
  llvm::Value* one_plus_erf =
      b.CreateSelect(b.CreateFCmpOLT(z, c(0.0)), erfc_a, b.CreateFSub(c(2.0), erfc_a));
  return b.CreateFMul(b.CreateFMul(x, c(0.5)), one_plus_erf);
}

}  // namespace dietcode::codegen
