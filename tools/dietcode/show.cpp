// `dietcode show`: what a module holds. Its operator, target and provenance, the
// selected micro-kernels with the declared shapes each serves, the dispatch tree as
// text; for one shape, the kernel it dispatches to as loop IR, LLVM IR or assembly
// (for the module's ISA, whatever the host).
#include <fmt/format.h>

#include <memory>

#include "inspect/inspect.h"
#include "runtime/module.h"
#include "tools/dietcode/subcommands.h"

namespace dietcode::tool {

namespace {

struct ShowOptions {
  std::string module;
  int64_t m = 0;  // 0: no shape
  std::string what = "summary";
};

int run_show(const ShowOptions& o) {
  fmt::print("{}",
             inspect::module_text(runtime::load_module_spec(o.module), o.module, o.what, o.m));
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
