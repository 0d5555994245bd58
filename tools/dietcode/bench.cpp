// `dietcode bench`: generated kernels against OpenBLAS, oneDNN, BLIS and LIBXSMM on a
// named workload, with the machine's roofline; a table, and optionally CSV and a plot.
#include <memory>

#include "benchmark/bench_job.h"
#include "support/parse.h"
#include "tools/dietcode/subcommands.h"

namespace dietcode::tool {

namespace {

struct BenchCliOptions {
  bench::BenchJob job;
  std::string m = "1..128";
  std::string peers;
  bool workload_given = false;
};

// "openblas,onednn" -> {"openblas", "onednn"}.
std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    names.push_back(
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return names;
}

int run_bench(BenchCliOptions o) {
  bench::BenchOptions& b = o.job.options;
  // "--workload modules", or modules alone: each module is measured on its own operator
  // (modules of the same operator side by side).
  if (b.workload == "modules" || (!o.job.module_paths.empty() && !o.workload_given))
    b.layers = bench::LayerSource::kEachModule;
  b.t_values = parse_int_list(o.m, "--M");
  if (!o.peers.empty()) b.peers = split_names(o.peers);
  bench::run_bench_job(o.job);
  return 0;
}

}  // namespace

void register_bench(CLI::App& app, Action& action) {
  auto o = std::make_shared<BenchCliOptions>();
  o->job.options.sweep = false;  // with --module, the sweep runs only when asked for
  CLI::App* cmd =
      app.add_subcommand("bench", "measure generated kernels against the vendor libraries");
  CLI::Option* workload =
      cmd->add_option(
             "--workload", o->job.options.workload,
             "bert-dense, bert-dense-epilogue, bert-attention, bert-elementwise, or modules "
             "(one table per "
             "operator of the "
             "modules, side by side; the default when --module is given)")
          ->capture_default_str();
  cmd->add_option("--M", o->m, "sequence lengths: '1,17,127', '1..128' or both")
      ->capture_default_str();
  cmd->add_option("--threads", o->job.options.threads, "threads for every implementation")
      ->capture_default_str();
  cmd->add_flag("--sweep", o->job.options.sweep,
                "best of a grid of micro-kernels per shape (the default without --module; with "
                "it, measured beside the modules as dietcode-sweep)");
  cmd->add_option("--module", o->job.module_paths,
                  "a tuned module file (repeatable: modules are measured side by side)");
  cmd->add_option("--kernels", o->job.kernels_path,
                  "our candidates: a file of schedules (JSON), one per line");
  cmd->add_flag("--winners", o->job.winners,
                "print the winning variant of every implementation per shape");
  cmd->add_option("--peers", o->peers,
                  "comma-separated subset of openblas,onednn,blis,libxsmm, or none");
  cmd->add_option("--peers-dir", o->job.options.peers_dir,
                  "folder of the peer plugins (default: beside the tool)");
  cmd->add_option("--seconds", o->job.options.seconds_per_measurement,
                  "timed seconds per implementation and shape")
      ->capture_default_str();
  cmd->add_option("--csv", o->job.csv_path, "write one row per measurement to this CSV file");
  cmd->add_option(
      "--plot", o->job.plot_path,
      "write GFLOP/s (GB/s for row operators) vs M to this .svg or .png file (gnuplot)");
  cmd->add_flag("--quiet", o->job.options.quiet, "no progress on stderr");
  cmd->callback([&action, o, workload] {
    o->workload_given = workload->count() > 0;
    action = [o] { return run_bench(*o); };
  });
}

}  // namespace dietcode::tool
