// In-process compilation through LLVM's ORC LLJIT (one engine per process; each
// compiled kernel owns a resource tracker, so destroying it frees its code).
// LLVM's Error/Expected values are turned into our errors at this boundary.
//
// Generated code calls functions it does not define (the runtime's C ABI:
// dietcode_parallel_for, dietcode_alloc, dietcode_free). The JIT's user hands their
// addresses over before compiling code that calls them:
//
//   codegen::jit_define_symbols({{"dietcode_alloc", reinterpret_cast<void*>(&dietcode_alloc)}});
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/llvm/target.h"
#include "lower/pipeline.h"

namespace dietcode::codegen {

using ComputeFn = void (*)(const int64_t* shape, float* const* buffers);

// The machine code of one kernel, live until destroyed.
class JitCode {
 public:
  virtual ~JitCode() = default;
  virtual ComputeFn compute() const = 0;
  virtual ComputeFn prepack() const = 0;  // null unless the schedule pre-packs B
};

// A function (or datum) of this process that generated code refers to by name.
struct JitSymbol {
  std::string name;  // as the generated code spells it (unmangled)
  void* address;
};

// Defines `symbols` in the process JIT (ORC absolute symbols), for all code compiled
// afterwards. Defining a name again with the same address does nothing; with another
// address it is an internal error. Thread-safe.
void jit_define_symbols(const std::vector<JitSymbol>& symbols);

// Compiles for the host CPU (the only target whose code can be run here). With an object
// cache in scope (object_cache.h), the object is cached under a key over the kernel's LLVM
// module, or, given a nonzero `source_digest`, under that digest (with the CPU and this
// build): a digest of what the kernel was lowered from (its operator's spec and its
// schedule, Module::compile_all), which finds a cached object without emitting the module
// (most of a cached load's time). The caller vouches that equal digests mean equal
// lowered kernels.
std::unique_ptr<JitCode> jit_compile(const lower::LoweredKernel& k, uint64_t source_digest = 0);

// Text of the kernel's LLVM IR (after the optimization pipeline when `optimized`) or
// its assembly, for any target (an AVX-512 target can be inspected on an AVX2 host).
std::string llvm_ir_text(const lower::LoweredKernel& k, const CpuTarget& target, bool optimized);
std::string assembly_text(const lower::LoweredKernel& k, const CpuTarget& target);

}  // namespace dietcode::codegen
