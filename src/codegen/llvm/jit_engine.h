// Internal to the code generators (codegen/llvm/, dispatch/): the process-wide ORC LLJIT
// that jit.cpp owns, for code other than kernels (e.g. the compiled dispatcher) to join.
// LLVM types are allowed here; public headers stay free of them.
//
//   auto ctx = std::make_unique<llvm::LLVMContext>();
//   std::string prefix = jit_unique_prefix();          // "dc17_": names are process-wide
//   auto m = ...module defining prefix + "f"...;
//   set_host_target(*m);
//   std::unique_ptr<JitModule> code = jit_add_module(std::move(m), std::move(ctx));
//   auto* f = reinterpret_cast<int (*)()>(code->lookup(prefix + "f"));
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>

#include "codegen/llvm/target.h"
#include "lower/pipeline.h"

namespace dietcode::codegen {

// A symbol prefix no other module in this process's JIT uses.
std::string jit_unique_prefix();

// A TargetMachine for `target` (any CPU, not only the host), for printing IR or assembly.
std::unique_ptr<llvm::TargetMachine> make_target_machine(const CpuTarget& target);

// Sets the module's data layout and triple to those of `tm`.
void set_target(llvm::Module& m, const llvm::TargetMachine& tm);

// Sets the module's data layout and triple to the JIT's (the host's).
void set_host_target(llvm::Module& m);

// The kernel as an LLVM module in `ctx`, for `target` (any CPU), after the JIT's own
// optimization pipeline when `optimized`: exactly what jit_compile compiles, with the
// functions named "compute" and "prepack" (for a kernel that pre-packs B).
std::unique_ptr<llvm::Module> kernel_module(llvm::LLVMContext& ctx, const lower::LoweredKernel& k,
                                            const CpuTarget& target, bool optimized);

// Machine code added to the process JIT; destroying it frees the code.
class JitModule {
 public:
  virtual ~JitModule() = default;
  // The address of a symbol the module defines (the full, prefixed name). A missing
  // symbol is an internal error.
  virtual void* lookup(const std::string& name) const = 0;
};

// Compiles the module (host data layout; see set_host_target) into the process JIT.
std::unique_ptr<JitModule> jit_add_module(std::unique_ptr<llvm::Module> m,
                                          std::unique_ptr<llvm::LLVMContext> ctx);

// The prefix of the function names of a module given to jit_add_named_module.
inline constexpr const char* kCachePlaceholder = "dcK_";

struct NamedJitModule {
  std::unique_ptr<JitModule> module;
  std::string prefix;  // replaces kCachePlaceholder in the module's function names
};

// Compiles a module whose functions are named kCachePlaceholder + name (after the JIT's
// optimization pipeline when `optimized`) into the process JIT; look them up as
// prefix + name. With an object cache in scope on this thread (object_cache.h), the
// object is read from it, keyed by the module's bitcode, the CPU and this build, or
// compiled and stored there. (A kernel known by its source skips this: jit_compile.)
NamedJitModule jit_add_named_module(std::unique_ptr<llvm::Module> m,
                                    std::unique_ptr<llvm::LLVMContext> ctx, bool optimized);

}  // namespace dietcode::codegen
