// The machine measurements were made on: what tuning records and modules carry, so
// that numbers from another CPU are never mixed in silently.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "schedule/isa.h"

namespace dietcode::tune {

struct MachineInfo {
  std::string cpu_model;                    // /proc/cpuinfo "model name"
  std::string llvm_cpu;                     // LLVM's name for the host CPU, e.g. "znver4"
  schedule::Isa isa = schedule::Isa::Avx2;  // widest vector ISA used
  std::string features;                     // LLVM feature string of the host
  int cores = 1;                            // logical CPUs this process may use

  // Same CPU model, LLVM CPU, ISA and core count: records are interchangeable.
  bool same_as(const MachineInfo& o) const;
  std::string describe() const;  // "AMD EPYC 9R14 (znver4, avx512, 2 cores)"
};

MachineInfo this_machine();
nlohmann::json to_json(const MachineInfo& m);
MachineInfo machine_from_json(const nlohmann::json& j);  // throws dietcode::Error

}  // namespace dietcode::tune
