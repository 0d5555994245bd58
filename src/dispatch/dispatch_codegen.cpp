// The decision tree as LLVM IR: `i32 select(ptr %shape)` with one basic block per node.
// An internal node loads shape[var], compares it `icmp sle` with its threshold (signed,
// like the interpreter's int64_t `<=`) and branches; a leaf returns its kernel. The JIT
// path joins the process-wide engine of codegen/llvm/jit.cpp through jit_engine.h.
#include "dispatch/dispatch_codegen.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <limits>

#include "codegen/llvm/jit_engine.h"
#include "support/error.h"

namespace dietcode::dispatch {

namespace {

std::unique_ptr<llvm::Module> emit_dispatcher(llvm::LLVMContext& ctx, const DecisionTree& tree,
                                              const std::string& name) {
  // The kernel indices only need to fit the i32 the function returns.
  validate(tree, std::numeric_limits<int32_t>::max());
  auto m = std::make_unique<llvm::Module>("dietcode_dispatcher", ctx);
  llvm::IRBuilder<> b(ctx);
  auto* type = llvm::FunctionType::get(b.getInt32Ty(), {b.getPtrTy()}, /*isVarArg=*/false);
  auto* fn = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, *m);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  fn->addFnAttr(llvm::Attribute::getWithMemoryEffects(
      ctx, llvm::MemoryEffects::argMemOnly(llvm::ModRefInfo::Ref)));
  llvm::Argument* shape = fn->getArg(0);
  shape->setName("shape");
  shape->addAttr(llvm::Attribute::NoCapture);
  shape->addAttr(llvm::Attribute::ReadOnly);

  // nodes[0] is the root, so its block comes first and is the entry.
  std::vector<llvm::BasicBlock*> blocks;
  blocks.reserve(tree.nodes.size());
  for (size_t i = 0; i < tree.nodes.size(); ++i)
    blocks.push_back(llvm::BasicBlock::Create(ctx, "node" + std::to_string(i), fn));
  for (size_t i = 0; i < tree.nodes.size(); ++i) {
    const DecisionNode& node = tree.nodes[i];
    b.SetInsertPoint(blocks[i]);
    if (node.var == -1) {
      b.CreateRet(b.getInt32(node.kernel));
      continue;
    }
    llvm::Value* address = b.CreateInBoundsGEP(b.getInt64Ty(), shape, b.getInt64(node.var));
    llvm::Value* value = b.CreateAlignedLoad(b.getInt64Ty(), address, llvm::Align(8));
    llvm::Value* goes_left = b.CreateICmpSLE(value, b.getInt64(node.threshold));
    b.CreateCondBr(goes_left, blocks[node.left], blocks[node.right]);
  }

  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*m, &os))
    internal_error(__FILE__, __LINE__, "the dispatcher's LLVM IR is invalid: " + problems);
  return m;
}

class JitDispatcher : public CompiledDispatcher {
 public:
  JitDispatcher(std::unique_ptr<codegen::JitModule> module, SelectFn select)
      : module_(std::move(module)), select_(select) {}
  SelectFn select_fn() const override { return select_; }

 private:
  std::unique_ptr<codegen::JitModule> module_;
  SelectFn select_;
};

}  // namespace

std::unique_ptr<CompiledDispatcher> jit_compile_dispatcher(const DecisionTree& tree) {
  auto ctx = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> m =
      emit_dispatcher(*ctx, tree, std::string(codegen::kCachePlaceholder) + "select");
  // Through the object cache when one is in scope (a model's second load compiles nothing).
  codegen::NamedJitModule compiled =
      codegen::jit_add_named_module(std::move(m), std::move(ctx), /*optimized=*/false);
  auto select = reinterpret_cast<SelectFn>(compiled.module->lookup(compiled.prefix + "select"));
  return std::make_unique<JitDispatcher>(std::move(compiled.module), select);
}

std::unique_ptr<llvm::Module> dispatcher_module(llvm::LLVMContext& ctx, const DecisionTree& tree,
                                                const codegen::CpuTarget& target) {
  std::unique_ptr<llvm::Module> m = emit_dispatcher(ctx, tree, "select");
  codegen::set_target(*m, *codegen::make_target_machine(target));
  return m;
}

std::string dispatcher_llvm_ir(const DecisionTree& tree, const codegen::CpuTarget& target) {
  llvm::LLVMContext ctx;
  std::string text;
  llvm::raw_string_ostream os(text);
  dispatcher_module(ctx, tree, target)->print(os, nullptr);
  return text;
}

}  // namespace dietcode::dispatch
