// A decision tree (dispatch/decision_tree.h) compiled to native code through the
// process's LLVM ORC JIT: `int32_t select(const int64_t* shape)` as nested
// compare-and-branch blocks, one per internal node.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "codegen/llvm/target.h"
#include "dispatch/decision_tree.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace dietcode::dispatch {

using SelectFn = int32_t (*)(const int64_t* shape);

// The compiled dispatcher; its code lives until it is destroyed.
class CompiledDispatcher {
 public:
  virtual ~CompiledDispatcher() = default;
  virtual SelectFn select_fn() const = 0;
  int select(const int64_t* shape) const { return select_fn()(shape); }
};

std::unique_ptr<CompiledDispatcher> jit_compile_dispatcher(const DecisionTree& tree);

// The dispatcher as an LLVM module in `ctx` for `target`, its function named "select"
// (for the exporter, which links it into a library; include LLVM to use it).
std::unique_ptr<llvm::Module> dispatcher_module(llvm::LLVMContext& ctx, const DecisionTree& tree,
                                                const codegen::CpuTarget& target);

// The dispatcher's LLVM IR (for `dietcode show` and tests).
std::string dispatcher_llvm_ir(const DecisionTree& tree, const codegen::CpuTarget& target);

}  // namespace dietcode::dispatch
