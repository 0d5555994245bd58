// `dietcode export`: a tuned module as a shared library plus C header that a C or C++
// program links without LLVM, XGBoost or this project (src/export).
//
//   dietcode export bert.module.json --out dist [--name bert_dense] [--native]
#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "export/export_module.h"
#include "runtime/module.h"
#include "tools/dietcode/subcommands.h"

namespace dietcode::tool {

namespace {

struct ExportCommand {
  std::string module;
  exporter::ExportOptions options;
  bool quiet = false;
};

int run_export(ExportCommand c) {
  if (c.options.name.empty()) {
    // "bert-2304x768.module.json" -> "bert_2304x768": the file name up to its first dot.
    std::string file = std::filesystem::path(c.module).filename().string();
    c.options.name = exporter::name_from(file.substr(0, file.find('.')));
  }
  // The name is checked before the module is read, so a typo costs nothing.
  exporter::check_name(c.options.name);
  runtime::ModuleSpec spec = runtime::load_module_spec(c.module);
  exporter::ExportResult r = exporter::export_module(spec, c.options);
  if (!c.quiet)
    fmt::print("{}: {} as {} ({} micro-kernels, {})\n  header  {}\n", c.module, spec.op.describe(),
               r.library, spec.kernels.size(), to_string(spec.isa), r.header);
  return 0;
}

}  // namespace

void register_export(CLI::App& app, Action& action) {
  auto c = std::make_shared<ExportCommand>();
  CLI::App* cmd = app.add_subcommand(
      "export",
      "a module as a self-contained shared library and C header (lib<name>.so, <name>.h)");
  cmd->add_option("module", c->module, "the module file (from dietcode tune)")->required();
  cmd->add_option("--out", c->options.out_dir, "the directory to write to (created if missing)")
      ->required();
  cmd->add_option("--name", c->options.name,
                  "C prefix of the API and file names (default: the module file's name); not "
                  "the name of a system library (m, c, pthread, ...), which lib<name>.so would "
                  "shadow");
  cmd->add_flag("--native", c->options.native,
                "compile for this machine's CPU model instead of the generic CPU of the module's "
                "ISA (the library may then not run on other CPUs)");
  cmd->add_flag("--quiet", c->quiet, "print nothing on success");
  cmd->callback([&action, c] { action = [c] { return run_export(*c); }; });
}

}  // namespace dietcode::tool
