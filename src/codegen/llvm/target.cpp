#include "codegen/llvm/target.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>

#include "support/error.h"

namespace dietcode::codegen {

namespace {

CpuTarget detect_host() {
  CpuTarget t;
  t.cpu = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  auto has = [&](const char* f) {
    auto it = features.find(f);
    return it != features.end() && it->second;
  };
  for (const auto& f : features)
    t.features +=
        std::string(t.features.empty() ? "" : ",") + (f.second ? "+" : "-") + f.first().str();
  if (!has("avx2") || !has("fma"))
    user_error("this CPU ({}) lacks AVX2 + FMA, the minimum vector ISA dietcode generates code for",
               t.cpu);
  t.isa = has("avx512f") ? schedule::Isa::Avx512 : schedule::Isa::Avx2;
  t.is_host = true;
  return t;
}

}  // namespace

const CpuTarget& host_target() {
  static const CpuTarget host = detect_host();
  return host;
}

CpuTarget target_for_isa(schedule::Isa isa) {
  if (isa == schedule::Isa::Avx512) return CpuTarget{"x86-64-v4", "", isa, host_supports(isa)};
  return CpuTarget{"x86-64-v3", "", isa, host_supports(isa)};
}

bool host_supports(schedule::Isa isa) {
  return isa == schedule::Isa::Avx2 || host_target().isa == schedule::Isa::Avx512;
}

}  // namespace dietcode::codegen
