// The one GELU of generated code (codegen/llvm/activation.h), compiled as scalar and as
// vector code, against the exact GELU (double-precision std::erf) over a dense range;
// tanh (the epilogue step) the same way against std::tanh.
// The bounds here are the accuracy activation.h states (tightened with the rational erfc,
// which replaced the exp-based Abramowitz & Stegun form: 5e-7, 5e-7 and 2e-4 before).
#include <gtest/gtest.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "codegen/llvm/activation.h"
#include "codegen/llvm/jit_engine.h"

using namespace dietcode;

namespace {

constexpr int kLanes = 8;

using Builder = llvm::Value* (*)(llvm::IRBuilder<>&, llvm::Value*);

struct GeluCode {
  std::unique_ptr<codegen::JitModule> module;
  float (*scalar)(float);
  void (*vector)(const float* x, float* y);  // kLanes at a time
};

// float scalar(float x) and void vector(const float* x, float* y), both `emit`.
GeluCode compile_gelu(Builder emit = codegen::emit_gelu) {
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto m = std::make_unique<llvm::Module>("gelu_test", *ctx);
  const std::string prefix = codegen::jit_unique_prefix();
  llvm::IRBuilder<> b(*ctx);
  llvm::Type* f32 = b.getFloatTy();

  auto* scalar = llvm::Function::Create(llvm::FunctionType::get(f32, {f32}, false),
                                        llvm::Function::ExternalLinkage, prefix + "scalar", *m);
  b.SetInsertPoint(llvm::BasicBlock::Create(*ctx, "entry", scalar));
  b.CreateRet(emit(b, scalar->getArg(0)));

  llvm::Type* vt = llvm::FixedVectorType::get(f32, kLanes);
  auto* vector = llvm::Function::Create(
      llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy(), b.getPtrTy()}, false),
      llvm::Function::ExternalLinkage, prefix + "vector", *m);
  b.SetInsertPoint(llvm::BasicBlock::Create(*ctx, "entry", vector));
  llvm::Value* x = b.CreateAlignedLoad(vt, vector->getArg(0), llvm::Align(4));
  b.CreateAlignedStore(emit(b, x), vector->getArg(1), llvm::Align(4));
  b.CreateRetVoid();

  codegen::set_host_target(*m);
  GeluCode code;
  code.module = codegen::jit_add_module(std::move(m), std::move(ctx));
  code.scalar = reinterpret_cast<float (*)(float)>(code.module->lookup(prefix + "scalar"));
  code.vector =
      reinterpret_cast<void (*)(const float*, float*)>(code.module->lookup(prefix + "vector"));
  return code;
}

double exact_gelu(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

}  // namespace

TEST(Gelu, ScalarAndVectorCodeAreOneDefinitionWithinItsStatedAccuracy) {
  GeluCode code = compile_gelu();
  // x in [-10, 10] in steps of 2^-12 (81921 points), padded to whole vectors.
  std::vector<float> xs;
  for (int i = -10 * 4096; i <= 10 * 4096; ++i) xs.push_back(float(i) / 4096.0f);
  while (xs.size() % kLanes) xs.push_back(0.0f);
  std::vector<float> vector_out(xs.size());
  for (size_t i = 0; i < xs.size(); i += kLanes) code.vector(&xs[i], &vector_out[i]);

  double max_abs = 0, max_rel = 0, max_rel_positive = 0, max_rel_anywhere = 0;
  float at_abs = 0, at_rel = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const float x = xs[i];
    const float got = code.scalar(x);
    // One definition: the scalar and the vector code agree to the last bit.
    ASSERT_EQ(got, vector_out[i]) << "x = " << x;
    const double want = exact_gelu(x);
    const double abs_error = std::fabs(got - want);
    const double rel_error = want != 0 ? abs_error / std::fabs(want) : abs_error;
    if (abs_error > max_abs) max_abs = abs_error, at_abs = x;
    if (std::fabs(want) >= 1e-3 && rel_error > max_rel) max_rel = rel_error, at_rel = x;
    if (x > 0) max_rel_positive = std::max(max_rel_positive, rel_error);
    max_rel_anywhere = std::max(max_rel_anywhere, rel_error);
  }
  std::printf(
      "gelu vs exact over [-10, 10]: max abs error %.3g (x = %g); max rel error %.3g for x > 0, "
      "%.3g where |gelu| >= 1e-3 (x = %g), %.3g anywhere (the far negative tail)\n",
      max_abs, at_abs, max_rel_positive, max_rel, at_rel, max_rel_anywhere);
  EXPECT_LT(max_abs, 4.5e-7);
  EXPECT_LT(max_rel_positive, 2.5e-7);
  EXPECT_LT(max_rel, 5e-5);
}

TEST(Gelu, SpecialValues) {
  GeluCode code = compile_gelu();
  EXPECT_EQ(code.scalar(0.0f), 0.0f);
  EXPECT_TRUE(std::isnan(code.scalar(NAN)));
  EXPECT_EQ(code.scalar(INFINITY), INFINITY);
  EXPECT_EQ(code.scalar(1e30f), 1e30f);
  EXPECT_EQ(code.scalar(-1e3f), 0.0f);
}

// tanh: one definition for scalar and vector code; relative error against std::tanh over
// [-10, 10] in steps of 2^-12, and near zero, where the polynomial branch takes over.
TEST(Tanh, ScalarAndVectorCodeAreOneDefinitionWithinItsStatedAccuracy) {
  GeluCode code = compile_gelu(codegen::emit_tanh);
  std::vector<float> xs;
  for (int i = -10 * 4096; i <= 10 * 4096; ++i) xs.push_back(float(i) / 4096.0f);
  for (float tiny : {1e-30f, 1e-8f, 1e-4f, 0.3999f, 0.4f, 0.4001f})
    xs.insert(xs.end(), {tiny, -tiny});
  while (xs.size() % kLanes) xs.push_back(0.0f);
  std::vector<float> vector_out(xs.size());
  for (size_t i = 0; i < xs.size(); i += kLanes) code.vector(&xs[i], &vector_out[i]);
  double max_rel = 0;
  float at = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const float x = xs[i];
    const float got = code.scalar(x);
    ASSERT_EQ(got, vector_out[i]) << "x = " << x;
    const double want = std::tanh(double(x));
    const double rel = want != 0 ? std::fabs(got - want) / std::fabs(want) : std::fabs(got);
    if (rel > max_rel) max_rel = rel, at = x;
  }
  std::printf("tanh vs std::tanh over [-10, 10]: max rel error %.3g (x = %g)\n", max_rel, at);
  EXPECT_LT(max_rel, 5e-7);
  EXPECT_EQ(code.scalar(0.0f), 0.0f);
  EXPECT_EQ(code.scalar(INFINITY), 1.0f);
  EXPECT_EQ(code.scalar(-INFINITY), -1.0f);
  EXPECT_EQ(code.scalar(50.0f), 1.0f);
  EXPECT_TRUE(std::isnan(code.scalar(NAN)));
}
