// `dietcode show`: what a module holds. Its operator, target and provenance, the
// selected micro-kernels with the declared shapes each serves, the dispatch tree as
// text; for one shape, the kernel it dispatches to as loop IR, LLVM IR or assembly
// (for the module's ISA, whatever the host).
#include <fmt/format.h>

#include <map>
#include <memory>

#include "codegen/llvm/jit.h"
#include "dispatch/dispatch_codegen.h"
#include "lower/pipeline.h"
#include "runtime/module.h"
#include "support/error.h"
#include "tools/dietcode/subcommands.h"

namespace dietcode::tool {

namespace {

struct ShowOptions {
  std::string module;
  int64_t m = 0;  // 0: no shape
  std::string what = "summary";
};

int run_show(const ShowOptions& o) {
  runtime::ModuleSpec spec = runtime::load_module_spec(o.module);
  te::Operator op = spec.op.build();
  codegen::CpuTarget target = codegen::target_for_isa(spec.isa);
  if (o.what == "summary" || o.what == "dispatch") {
    if (o.what == "summary") {
      fmt::print("module {}\n", o.module);
      fmt::print("  operator  {}\n", spec.op.describe());
      fmt::print("  target    {} ({} threads); tuned on {}\n", to_string(spec.isa), spec.threads,
                 runtime::info_text(spec.machine, "cpu_model", "?"));
      for (auto& [k, v] : spec.provenance.items())
        fmt::print("  {:<9} {}\n", k, v.is_string() ? v.get<std::string>() : v.dump());
      std::map<int, int> served;
      for (const auto& s : spec.op.declared_shapes()) ++served[spec.dispatch.select(s)];
      fmt::print("micro-kernels ({}):\n", spec.kernels.size());
      for (size_t i = 0; i < spec.kernels.size(); ++i) {
        const auto& s = spec.kernels[i];
        fmt::print("  kernel {}: {}x{} tile, kc={} mc={} nc={}, order {}{}{}, parallel {}, A {}, "
                   "{} declared shapes\n    {}\n",
                   i, s.mr, s.nr, s.kc, s.mc, s.nc, to_string(s.loop_order[0]),
                   to_string(s.loop_order[1]), to_string(s.loop_order[2]), to_string(s.parallel),
                   s.pack_a == schedule::PackA::Packed ? "packed" : "read in place",
                   served[int(i)], schedule::to_json_text(s));
      }
    }
    fmt::print("dispatch (depth {}, {} leaves):\n{}", spec.dispatch.depth(),
               spec.dispatch.num_leaves(), spec.dispatch.describe({"M"}));
    if (o.what == "dispatch") fmt::print("\n{}", dispatch::dispatcher_llvm_ir(spec.dispatch, target));
    return 0;
  }
  if (o.m < 1) user_error("--what {}: give the shape with --M (a positive integer)", o.what);
  int k = spec.dispatch.select({o.m});
  fmt::print("; M = {} dispatches to kernel {}: {}\n", o.m, k,
             schedule::to_json_text(spec.kernels[k]));
  schedule::BoundSchedule bound = schedule::bind(spec.kernels[k], op);
  if (o.what == "loops") {
    lower::lower(bound, [](const std::string& pass, const std::string& ir) {
      fmt::print("; after {}\n{}\n", pass, ir);
    });
    return 0;
  }
  lower::LoweredKernel lowered = lower::lower(bound);
  if (o.what == "llvm")
    fmt::print("{}", codegen::llvm_ir_text(lowered, target, true));
  else if (o.what == "asm")
    fmt::print("{}", codegen::assembly_text(lowered, target));
  else
    user_error("--what '{}': expected summary, dispatch, loops, llvm or asm", o.what);
  return 0;
}

}  // namespace

void register_show(CLI::App& app, Action& action) {
  auto o = std::make_shared<ShowOptions>();
  CLI::App* cmd = app.add_subcommand(
      "show", "a module's micro-kernels and dispatch tree; a shape's kernel as IR or assembly");
  cmd->add_option("module", o->module, "the module file")->required();
  cmd->add_option("--M", o->m, "a shape: show the kernel it dispatches to");
  cmd->add_option("--what", o->what,
                  "summary, dispatch (the tree and its LLVM IR), loops, llvm or asm (with --M)")
      ->capture_default_str();
  cmd->callback([&action, o] { action = [o] { return run_show(*o); }; });
}

}  // namespace dietcode::tool
