#include "tune/machine.h"

#include <fmt/format.h>
#include <sched.h>

#include <fstream>

#include "codegen/llvm/target.h"
#include "support/error.h"

namespace dietcode::tune {

bool MachineInfo::same_as(const MachineInfo& o) const {
  return cpu_model == o.cpu_model && llvm_cpu == o.llvm_cpu && isa == o.isa && cores == o.cores;
}

std::string MachineInfo::describe() const {
  return fmt::format("{} ({}, {}, {} cores)", cpu_model, llvm_cpu, to_string(isa), cores);
}

MachineInfo this_machine() {
  MachineInfo m;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) m.cpu_model = line.substr(colon + 2);
      break;
    }
  }
  if (m.cpu_model.empty()) m.cpu_model = "unknown";
  const codegen::CpuTarget& host = codegen::host_target();
  m.llvm_cpu = host.cpu;
  m.isa = host.isa;
  m.features = host.features;
  cpu_set_t set;
  m.cores = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  return m;
}

nlohmann::json to_json(const MachineInfo& m) {
  return {{"cpu_model", m.cpu_model},
          {"llvm_cpu", m.llvm_cpu},
          {"isa", to_string(m.isa)},
          {"features", m.features},
          {"cores", m.cores}};
}

MachineInfo machine_from_json(const nlohmann::json& j) {
  if (!j.is_object()) user_error("machine: expected a JSON object");
  MachineInfo m;
  try {
    m.cpu_model = j.at("cpu_model").get<std::string>();
    m.llvm_cpu = j.at("llvm_cpu").get<std::string>();
    m.isa = schedule::parse_isa(j.at("isa").get<std::string>());
    m.features = j.value("features", std::string());
    const nlohmann::json& cores = j.at("cores");
    if (!cores.is_number_integer() || cores.get<int64_t>() < 1 || cores.get<int64_t>() > 1 << 20)
      user_error("machine: field 'cores' must be a positive integer");
    m.cores = cores.get<int>();
  } catch (const nlohmann::json::exception& e) {
    user_error("machine: {}", e.what());
  }
  return m;
}

}  // namespace dietcode::tune
