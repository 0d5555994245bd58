// `dietcode bench`: generated kernels against OpenBLAS, oneDNN, BLIS and LIBXSMM on a
// named workload, with the machine's roofline; a table, and optionally CSV and a plot.
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "bench/harness.h"
#include "bench/report.h"
#include "runtime/module.h"
#include "support/error.h"
#include "support/parse.h"
#include "tools/dietcode/subcommands.h"

namespace dietcode::tool {

namespace {

struct BenchCliOptions {
  bench::BenchOptions bench;
  std::string m = "1..128";
  std::string peers;
  bool sweep = false;
  std::vector<std::string> modules;
  std::string csv, plot, kernels;
  bool winners = false;
  bool workload_given = false;
};

std::string default_peers_dir() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "peers" : (exe.parent_path() / "peers").string();
}

// One schedule (JSON) per line; blank lines and lines starting with # are skipped.
std::vector<schedule::MicroKernelSchedule> read_kernels(const std::string& path) {
  std::ifstream f(path);
  if (!f) user_error("--kernels {}: cannot open the file", path);
  std::vector<schedule::MicroKernelSchedule> out;
  std::string line;
  for (int number = 1; std::getline(f, line); ++number) {
    if (line.find_first_not_of(" \t") == std::string::npos ||
        line[line.find_first_not_of(" \t")] == '#')
      continue;
    try {
      out.push_back(schedule::schedule_from_json_text(line));
    } catch (const Error& e) {
      user_error("--kernels {}: line {}: {}", path, number, e.what());
    }
  }
  if (out.empty()) user_error("--kernels {}: no schedule in the file", path);
  return out;
}

int run_bench(BenchCliOptions o) {
  // Each module is labelled by its tuning mode ("joint", "per-shape"), or by its file
  // name when two share a mode.
  std::map<std::string, int> modes;
  std::vector<runtime::ModuleSpec> specs;
  for (const std::string& path : o.modules) {
    specs.push_back(runtime::load_module_spec(path));
    ++modes[runtime::info_text(specs.back().provenance, "mode", "module")];
  }
  std::map<std::string, int> names;
  for (const runtime::ModuleSpec& m : specs) ++names[runtime::info_text(m.provenance, "name", "")];
  for (size_t i = 0; i < specs.size(); ++i) {
    std::string mode = runtime::info_text(specs[i].provenance, "mode", "module");
    std::string name = runtime::info_text(specs[i].provenance, "name", "");
    std::string label = modes[mode] == 1                      ? mode
                        : !name.empty() && names[name] == 1 ? name
                                                              : std::filesystem::path(o.modules[i]).stem().string();
    o.bench.modules.push_back({label, specs[i]});
  }
  // Modules alone: each is measured on its own operator.
  if (!specs.empty() && !o.workload_given) o.bench.workload = "modules";
  o.bench.sweep = o.sweep;
  o.bench.t_values = parse_int_list(o.m, "--M");
  if (!o.peers.empty()) {
    size_t start = 0;
    while (start <= o.peers.size()) {
      size_t comma = o.peers.find(',', start);
      o.bench.peers.push_back(
          o.peers.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  // Output paths are checked before minutes of measurement, not after.
  if (!o.plot.empty()) {
    std::string ext = std::filesystem::path(o.plot).extension().string();
    if (ext != ".svg" && ext != ".png") user_error("--plot {}: expected a .svg or .png file name", o.plot);
  }
  if (!o.csv.empty() && !std::ofstream(o.csv, std::ios::app))
    user_error("--csv {}: cannot open the file for writing", o.csv);
  if (o.bench.peers_dir.empty()) o.bench.peers_dir = default_peers_dir();
  if (!o.kernels.empty()) o.bench.kernels = read_kernels(o.kernels);
  bench::BenchResult r = bench::run_bench(o.bench);
  fmt::print("{}", bench::format_table(r));
  if (o.winners)
    for (const bench::Measurement& m : r.rows)
      fmt::print("winner {} M={} {}: {} ({:.1f} GFLOP/s)\n", m.workload, m.m, m.impl, m.variant,
                 m.gflops);
  if (!o.csv.empty()) bench::write_csv(r, o.csv);
  if (!o.plot.empty()) bench::write_plot(r, o.plot);
  return 0;
}

}  // namespace

void register_bench(CLI::App& app, Action& action) {
  auto o = std::make_shared<BenchCliOptions>();
  CLI::App* cmd =
      app.add_subcommand("bench", "measure generated kernels against the vendor libraries");
  CLI::Option* workload =
      cmd->add_option("--workload", o->bench.workload,
                      "bert-dense, bert-attention, or modules (each --module on its own "
                      "operator; the default when --module is given)")
          ->capture_default_str();
  cmd->add_option("--M", o->m, "sequence lengths: '1,17,127', '1..128' or both")
      ->capture_default_str();
  cmd->add_option("--threads", o->bench.threads, "threads for every implementation")
      ->capture_default_str();
  cmd->add_flag("--sweep", o->sweep,
                "best of a grid of micro-kernels per shape (the default without --module; with "
                "it, measured beside the modules as dietcode-sweep)");
  cmd->add_option("--module", o->modules,
                  "a tuned module file (repeatable: modules are measured side by side)");
  cmd->add_option("--kernels", o->kernels,
                  "our candidates: a file of schedules (JSON), one per line");
  cmd->add_flag("--winners", o->winners,
                "print the winning variant of every implementation per shape");
  cmd->add_option("--peers", o->peers,
                  "comma-separated subset of openblas,onednn,blis,libxsmm, or none");
  cmd->add_option("--peers-dir", o->bench.peers_dir,
                  "folder of the peer plugins (default: beside the tool)");
  cmd->add_option("--seconds", o->bench.seconds_per_measurement,
                  "timed seconds per implementation and shape")
      ->capture_default_str();
  cmd->add_option("--csv", o->csv, "write one row per measurement to this CSV file");
  cmd->add_option("--plot", o->plot, "write GFLOP/s vs M to this .svg or .png file (gnuplot)");
  cmd->add_flag("--quiet", o->bench.quiet, "no progress on stderr");
  cmd->callback([&action, o, workload] {
    o->workload_given = workload->count() > 0;
    action = [o] { return run_bench(*o); };
  });
}

}  // namespace dietcode::tool
