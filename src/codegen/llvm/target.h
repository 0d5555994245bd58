// The CPU a kernel is compiled for: LLVM's CPU name and feature string, and the
// vector ISA the micro-kernel schedules are shaped for. No LLVM types here.
#pragma once

#include <string>

#include "schedule/isa.h"

namespace dietcode::codegen {

struct CpuTarget {
  std::string cpu;                          // LLVM CPU name, e.g. "znver4", "x86-64-v3"
  std::string features;                     // LLVM feature string, e.g. "+avx2,+fma,..."
  schedule::Isa isa = schedule::Isa::Avx2;  // the widest vector ISA usable
  bool is_host = false;                     // code for this target can run in this process
};

// The machine this process runs on. Throws dietcode::Error if it lacks AVX2 + FMA.
const CpuTarget& host_target();

// A generic target for an ISA (AVX2 -> x86-64-v3, AVX-512 -> x86-64-v4), for
// inspecting code that this machine may not be able to run.
CpuTarget target_for_isa(schedule::Isa isa);

// True if the host can run code using `isa`.
bool host_supports(schedule::Isa isa);

}  // namespace dietcode::codegen
