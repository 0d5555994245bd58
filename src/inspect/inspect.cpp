#include "inspect/inspect.h"

#include <fmt/format.h>

#include <map>

#include "codegen/llvm/jit.h"
#include "dispatch/dispatch_codegen.h"
#include "lower/pipeline.h"
#include "support/error.h"

namespace dietcode::inspect {

namespace {

std::string module_summary(const runtime::ModuleSpec& spec, const std::string& path) {
  std::string out = fmt::format("module {}\n", path);
  out += fmt::format("  operator  {}\n", spec.op.describe());
  out += fmt::format("  target    {} ({} threads); tuned on {}\n", to_string(spec.isa), spec.threads,
                     runtime::info_text(spec.machine, "cpu_model", "?"));
  for (auto& [k, v] : spec.provenance.items())
    out += fmt::format("  {:<9} {}\n", k, v.is_string() ? v.get<std::string>() : v.dump());
  std::map<int, int> served;
  for (const auto& s : spec.op.declared_shapes()) ++served[spec.dispatch.select(s)];
  out += fmt::format("micro-kernels ({}):\n", spec.kernels.size());
  for (size_t i = 0; i < spec.kernels.size(); ++i) {
    const schedule::AnySchedule& s = spec.kernels[i];
    out += fmt::format("  kernel {}: {}, {} declared shapes\n    {}\n", i, schedule::describe(s),
                       served[int(i)], schedule::to_json_text(s));
  }
  return out;
}

}  // namespace

namespace {

// The views of one lowering (a bound schedule of any kind).
template <typename Bound>
std::string lowered_text(const te::Operator& op, const Bound& bound,
                         const codegen::CpuTarget& target, const std::string& what) {
  if (what == "loops") {
    std::string out = op.describe();
    lower::lower(bound, [&out](const std::string& pass, const std::string& ir) {
      out += fmt::format("// ---- after {}\n{}", pass, ir);
    });
    return out;
  }
  lower::LoweredKernel k = lower::lower(bound);
  if (what == "llvm") return codegen::llvm_ir_text(k, target, true);
  if (what == "llvm-unoptimized") return codegen::llvm_ir_text(k, target, false);
  if (what == "asm") return codegen::assembly_text(k, target);
  user_error("--what '{}': expected loops, llvm, llvm-unoptimized or asm", what);
}

}  // namespace

std::string schedule_text(const te::Operator& op, const schedule::MicroKernelSchedule& s,
                          const codegen::CpuTarget& target, const std::string& what) {
  return lowered_text(op, schedule::bind(s, op), target, what);
}

std::string schedule_text(const te::Operator& op, const schedule::RowSchedule& s,
                          const codegen::CpuTarget& target, const std::string& what) {
  return lowered_text(op, schedule::bind(s, op), target, what);
}

std::string schedule_text(const te::Operator& op, const schedule::AttentionSchedule& s,
                          const codegen::CpuTarget& target, const std::string& what) {
  return lowered_text(op, schedule::bind(s, op), target, what);
}

std::string module_text(const runtime::ModuleSpec& spec, const std::string& path,
                        const std::string& what, int64_t m) {
  te::Operator op = spec.op.build();
  codegen::CpuTarget target = codegen::target_for_isa(spec.isa);
  if (what == "summary" || what == "dispatch") {
    std::string out = what == "summary" ? module_summary(spec, path) : "";
    out += fmt::format("dispatch (depth {}, {} leaves):\n{}", spec.dispatch.depth(),
                       spec.dispatch.num_leaves(), spec.dispatch.describe({"M"}));
    if (what == "dispatch")
      out += fmt::format("\n{}", dispatch::dispatcher_llvm_ir(spec.dispatch, target));
    return out;
  }
  if (m < 1) user_error("--what {}: give the shape with --M (a positive integer)", what);
  if (what != "loops" && what != "llvm" && what != "asm")
    user_error("--what '{}': expected summary, dispatch, loops, llvm or asm", what);
  int k = spec.dispatch.select({m});
  std::string out = fmt::format("; M = {} dispatches to kernel {}: {}\n", m, k,
                                schedule::to_json_text(spec.kernels[k]));
  if (what == "loops") {
    lower::lower(op, spec.kernels[k], [&out](const std::string& pass, const std::string& ir) {
      out += fmt::format("; after {}\n{}\n", pass, ir);
    });
    return out;
  }
  lower::LoweredKernel lowered = lower::lower(op, spec.kernels[k]);
  if (what == "llvm") return out + codegen::llvm_ir_text(lowered, target, true);
  return out + codegen::assembly_text(lowered, target);
}

}  // namespace dietcode::inspect
