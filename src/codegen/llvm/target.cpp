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
  t.isa = has("avx512f") ? "avx512" : "avx2";
  t.is_host = true;
  return t;
}

}  // namespace

const CpuTarget& host_target() {
  static const CpuTarget host = detect_host();
  return host;
}

CpuTarget target_for_isa(const std::string& isa) {
  if (isa == "avx2") return CpuTarget{"x86-64-v3", "", "avx2", host_supports("avx2")};
  if (isa == "avx512") return CpuTarget{"x86-64-v4", "", "avx512", host_supports("avx512")};
  user_error("unknown vector ISA '{}'; expected avx2 or avx512", isa);
}

bool host_supports(const std::string& isa) {
  const CpuTarget& h = host_target();
  return isa == "avx2" || (isa == "avx512" && h.isa == "avx512");
}

}  // namespace dietcode::codegen
