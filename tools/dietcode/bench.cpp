// `dietcode bench`: generated kernels against OpenBLAS, oneDNN, BLIS and LIBXSMM on a
// named workload, with the machine's roofline; a table, and optionally CSV and a plot.
#include <fmt/format.h>

#include <memory>

#include "benchmark/bench_job.h"
#include "benchmark/encoder_bench.h"
#include "support/error.h"
#include "support/parse.h"
#include "tools/dietcode/subcommands.h"

namespace dietcode::tool {

namespace {

struct BenchCliOptions {
  bench::BenchJob job;
  std::string m = "1..128";
  std::string peers;
  std::string threads = "1";
  bool workload_given = false;
  // bert-base-encoder
  bench::EncoderBenchOptions encoder;
  std::string layers = "1,12";
};

// The whole encoder against libtorch and ONNX Runtime.
int run_encoder_bench(BenchCliOptions o) {
  bench::EncoderBenchOptions& e = o.encoder;
  e.lengths = parse_int_list(o.m, "--M");
  e.layers = parse_int_list(o.layers, "--layers");
  e.threads.clear();
  for (int64_t n : parse_int_list(o.threads, "--threads")) e.threads.push_back(int(n));
  if (!o.peers.empty()) e.engines = split_names(o.peers);
  e.peers_dir = o.job.options.peers_dir;
  e.quiet = o.job.options.quiet;
  e.csv_path = o.job.csv_path;
  e.plot_path = o.job.plot_path;
  bench::EncoderBenchResult r = bench::run_encoder_bench(e);
  fmt::print("{}", bench::format_encoder_table(r));
  if (!e.csv_path.empty()) bench::write_encoder_csv(r, e.csv_path);
  if (!e.plot_path.empty()) bench::write_encoder_plot(r, e.plot_path);
  return 0;
}

int run_bench(BenchCliOptions o) {
  if (o.job.options.workload == "bert-base-encoder") return run_encoder_bench(std::move(o));
  bench::BenchOptions& b = o.job.options;
  std::vector<int64_t> threads = parse_int_list(o.threads, "--threads");
  if (threads.size() != 1)
    user_error("--threads {}: one thread count (a list only for --workload bert-base-encoder)",
               o.threads);
  b.threads = int(threads[0]);
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
             "bert-dense, bert-dense-epilogue, bert-attention, bert-elementwise, "
             "bert-base-encoder (the tuned encoder of --model against libtorch and ONNX "
             "Runtime), or modules (one table per operator of the modules, side by side; the "
             "default when --module is given)")
          ->capture_default_str();
  cmd->add_option("--M", o->m, "sequence lengths: '1,17,127', '1..128' or both")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads,
                  "threads for every implementation (bert-base-encoder: a list, '1,2')")
      ->capture_default_str();
  cmd->add_option("--model", o->encoder.model_dir,
                  "bert-base-encoder: the model directory (dietcode tune bert-base --out)")
      ->capture_default_str();
  cmd->add_option("--weights", o->encoder.weights,
                  "bert-base-encoder: safetensors weights (default: random ones written into "
                  "the model directory)");
  cmd->add_option("--layers", o->layers, "bert-base-encoder: layer counts, '1,12'")
      ->capture_default_str();
  cmd->add_option("--repeat", o->encoder.repeat,
                  "bert-base-encoder: timed runs per engine and length, split over the rounds")
      ->capture_default_str();
  cmd->add_option("--rounds", o->encoder.rounds,
                  "bert-base-encoder: rounds, one after another, the engines' order reversed "
                  "every other round; a latency is the median of the rounds' medians")
      ->capture_default_str();
  cmd->add_option("--ort-script", o->encoder.ort_script,
                  "bert-base-encoder: the ONNX Runtime script (default: "
                  "bench/peers/ort/bert_encoder.mjs of the source tree)");
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
                  "comma-separated subset of openblas,onednn,blis,libxsmm, or none "
                  "(bert-base-encoder: libtorch,onnxruntime)");
  cmd->add_option("--peers-dir", o->job.options.peers_dir,
                  "folder of the peer plugins (default: beside the tool)");
  cmd->add_flag("--cold-weights", o->job.options.cold_weights,
                "dense layers at one thread: time each call with the weights in memory, not in "
                "cache, as a model's layers run (how `dietcode tune bert-base` tunes); roofline "
                "from DRAM");
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
