// codegen::jit_define_symbols: functions the JIT's user hands over by name are what
// generated code calls (the runtime registers its C ABI this way).
#include <gtest/gtest.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "codegen/llvm/jit.h"
#include "codegen/llvm/jit_engine.h"
#include "support/error.h"

using namespace dietcode;

namespace {

int64_t add_one(int64_t x) {
  return x + 1;
}
int64_t add_two(int64_t x) {
  return x + 2;
}

// int64_t <prefix>call(int64_t x) { return callee(x); }, compiled by the process JIT.
std::unique_ptr<codegen::JitModule> compile_caller(const std::string& prefix,
                                                   const std::string& callee) {
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto m = std::make_unique<llvm::Module>("jit_symbols_test", *ctx);
  llvm::IRBuilder<> b(*ctx);
  auto* type = llvm::FunctionType::get(b.getInt64Ty(), {b.getInt64Ty()}, false);
  auto* f = llvm::Function::Create(type, llvm::Function::ExternalLinkage, prefix + "call", *m);
  b.SetInsertPoint(llvm::BasicBlock::Create(*ctx, "entry", f));
  b.CreateRet(b.CreateCall(m->getOrInsertFunction(callee, type), {f->getArg(0)}));
  codegen::set_host_target(*m);
  return codegen::jit_add_module(std::move(m), std::move(ctx));
}

}  // namespace

TEST(JitSymbols, GeneratedCodeCallsTheDefinedAddress) {
  const std::string prefix = codegen::jit_unique_prefix();
  const std::string name = prefix + "add_one";
  codegen::jit_define_symbols({{name, reinterpret_cast<void*>(&add_one)}});
  auto code = compile_caller(prefix, name);
  auto* call = reinterpret_cast<int64_t (*)(int64_t)>(code->lookup(prefix + "call"));
  EXPECT_EQ(call(41), 42);
}

TEST(JitSymbols, RedefiningIsANoOpOnlyAtTheSameAddress) {
  const std::string name = codegen::jit_unique_prefix() + "add";
  codegen::jit_define_symbols({{name, reinterpret_cast<void*>(&add_one)}});
  EXPECT_NO_THROW(codegen::jit_define_symbols({{name, reinterpret_cast<void*>(&add_one)}}));
  EXPECT_THROW(codegen::jit_define_symbols({{name, reinterpret_cast<void*>(&add_two)}}),
               InternalError);
}
