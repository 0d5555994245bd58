// Textual views of what the compiler makes, for people: `dietcode inspect` (a schedule's
// loop IR after each lowering pass, its LLVM IR or assembly, for any ISA) and `dietcode
// show` (a module's operator, provenance, micro-kernels and dispatch tree; the kernel a
// shape dispatches to, in the module's ISA whatever the host).
#pragma once

#include <cstdint>
#include <string>

#include "codegen/llvm/target.h"
#include "runtime/module.h"
#include "schedule/attention_schedule.h"
#include "schedule/micro_kernel.h"
#include "schedule/row_schedule.h"
#include "te/tensor.h"

namespace dietcode::inspect {

// what: "loops" (the operator, then the IR after every pass), "llvm", "llvm-unoptimized"
// or "asm". Throws dietcode::Error for another `what` or an invalid schedule.
std::string schedule_text(const te::Operator& op, const schedule::MicroKernelSchedule& s,
                          const codegen::CpuTarget& target, const std::string& what);
// The same for a row operator under a row schedule.
std::string schedule_text(const te::Operator& op, const schedule::RowSchedule& s,
                          const codegen::CpuTarget& target, const std::string& what);
// The same for fused attention under an attention schedule.
std::string schedule_text(const te::Operator& op, const schedule::AttentionSchedule& s,
                          const codegen::CpuTarget& target, const std::string& what);

// what: "summary" (operator, target, provenance, micro-kernels with the declared shapes
// each serves, dispatch tree), "dispatch" (the tree and its LLVM IR), or, for the shape
// M = m, "loops", "llvm" or "asm" of the kernel it dispatches to. `path` names the module
// in the summary. Throws dietcode::Error for a bad `what` or a missing shape.
std::string module_text(const runtime::ModuleSpec& spec, const std::string& path,
                        const std::string& what, int64_t m);

}  // namespace dietcode::inspect
