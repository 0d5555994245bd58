// `dietcode tune`: the auto-scheduler. A workload (a preset, a spec file, or one
// operator given with --op ...) is tuned operator by operator into module files,
// jointly for all declared shapes (DietCode) or shape by shape (the per-shape
// baseline); then the modules are measured against the vendor libraries.
//
//   dietcode tune                               # preset bert-base: the encoder's operators
//                                               # into a model dir, then end to end vs ORT
//                                               # and libtorch, ~6 minutes
//   dietcode tune my-workload.json --trials 500 --out modules/
//   dietcode tune --op dense --N 2304 --K 768 --M 1..128 --trials 1000 --out qkv.module.json
#include <memory>

#include "support/error.h"
#include "support/parse.h"
#include "tools/dietcode/operator_options.h"
#include "tools/dietcode/subcommands.h"
#include "workflow/tune_workload.h"

namespace dietcode::tool {

namespace {

struct TuneCliOptions {
  workflow::TuneWorkloadOptions options;
  OperatorOptions op;
  bool op_given = false;
  bool evaluate_model = false, no_bench = false;
  std::string bench_m = "1,2,3,5,8,13,16,17,24,31,32,48,64,80,97,113,127,128";
  std::string encoder_layers = "1,12";
};

int run_tune(TuneCliOptions o) {
  workflow::TuneWorkloadOptions& w = o.options;
  if (!w.workload.empty() && o.op_given)
    user_error("give either a workload ('{}') or --op ..., not both", w.workload);
  if (o.op_given) w.op = o.op.spec();
  if (w.tune.per_shape) w.tune.per_shape_m = o.op.m_values();
  w.bench = !o.no_bench;
  w.bench_m = parse_int_list(o.bench_m, "--bench-M");
  w.encoder_layers = o.encoder_layers == "none"
                         ? std::vector<int64_t>{}
                         : parse_int_list(o.encoder_layers, "--bench-layers");
  if (o.evaluate_model)
    workflow::evaluate_model(w);
  else
    workflow::tune_workload(w);
  return 0;
}

}  // namespace

void register_tune(CLI::App& app, Action& action) {
  auto o = std::make_shared<TuneCliOptions>();
  o->op.m = "1..128";
  // One thread by default: on one core the measurements are reproducible even on a
  // shared machine (several threads there see neighbours take cores; see the benchmark
  // record, docs/results.md). --threads N tunes for N threads.
  o->options.tune.threads = 1;
  CLI::App* cmd = app.add_subcommand(
      "tune",
      "auto-schedule a workload for all its shapes (DietCode) or shape by shape; with no "
      "arguments, every operator of BERT-base at seq 1..128, then the whole encoder");
  cmd->add_option("workload", o->options.workload,
                  "a preset (bert-base-dense, bert-dense-2304x768, bert-base-epilogue, "
                  "bert-base: every operator of the encoder, a model directory for `dietcode "
                  "run`, the default) or a spec file (.json)");
  o->op.add_to(*cmd);
  cmd->add_option("--trials", o->options.trials,
                  "joint: measured trials per operator (default 1000 for --op, 250 per "
                  "operator of a workload)");
  cmd->add_flag("--per-shape", o->options.tune.per_shape,
                "the Ansor-style baseline: tune each M of --M alone over its divisors");
  cmd->add_option("--trials-per-shape", o->options.tune.trials_per_shape,
                  "per-shape: measured trials for each shape")
      ->capture_default_str();
  cmd->add_option("--records", o->options.tune.records_path,
                  "tuning records file for --op (default: <out>.records.jsonl; resumed when it "
                  "exists)");
  cmd->add_option("--out", o->options.out,
                  "module file (--op) or folder of modules (a workload; default "
                  "dietcode-out/<workload>)");
  cmd->add_option("--threads", o->options.tune.threads, "threads of the tuned kernels")
      ->capture_default_str();
  cmd->add_option("--warm-start", o->options.tune.warm_start_path,
                  "records of another run or machine, used to train the cost model only");
  cmd->add_option("--max-kernels", o->options.tune.max_kernels, "most micro-kernels in a module")
      ->capture_default_str();
  cmd->add_option("--weight-layouts", o->options.tune.max_weight_layouts,
                  "most packed layouts of the constant weights a module keeps, each a copy of "
                  "the weights in memory (0: no limit)")
      ->capture_default_str();
  cmd->add_flag("--cold-weights", o->options.tune.measure.cold_weights,
                "measure with the weights flushed from the caches before each call, as a model's "
                "layers run (the default of the bert-base preset)");
  cmd->add_option("--workers", o->options.tune.measure.workers,
                  "measurement worker processes (compile in parallel)")
      ->capture_default_str();
  cmd->add_option("--population", o->options.tune.search.population, "search population")
      ->capture_default_str();
  cmd->add_option("--generations", o->options.tune.search.generations, "generations per round")
      ->capture_default_str();
  cmd->add_option("--measure-per-round", o->options.tune.search.measure_per_round,
                  "measurements per search round")
      ->capture_default_str();
  cmd->add_option("--probe-fraction", o->options.tune.search.shape_probe_fraction,
                  "share of each round measuring kernels on declared shapes (0: the paper)")
      ->capture_default_str();
  cmd->add_option("--random-fraction", o->options.tune.search.random_fraction,
                  "share of each round drawn at random from the space (1: no search, e.g. to "
                  "collect a cost-model evaluation set)")
      ->capture_default_str();
  cmd->add_option("--seed", o->options.tune.seed, "random seed")->capture_default_str();
  cmd->add_flag("--evaluate-model", o->evaluate_model,
                "report the cost model's held-out ranking accuracy on --records and exit");
  cmd->add_flag("--no-bench", o->no_bench, "do not measure the modules against the peers");
  cmd->add_flag("--refine", o->options.refine,
                "bert-base: once tuned, decide the model's dispatch again inside the model "
                "(as `dietcode refine`: minutes; worth it at two threads) before the tables");
  cmd->add_option("--report", o->options.report_dir,
                  "write an HTML report with plots (tuning curve, GFLOP/s vs M, kernel shares, "
                  "cost model) to this folder");
  cmd->add_option("--bench-M", o->bench_m,
                  "sequence lengths of the final benchmark (a list or ranges, e.g. 1..128)")
      ->capture_default_str();
  cmd->add_option("--bench-layers", o->encoder_layers,
                  "bert-base: layer counts of the final end-to-end benchmark, or none")
      ->capture_default_str();
  cmd->add_option("--bench-seconds", o->options.bench_seconds,
                  "timed seconds per implementation and shape in the final benchmark")
      ->capture_default_str();
  cmd->add_flag("--quiet", o->options.tune.quiet, "no progress on stderr");
  CLI::Option* op_option = cmd->get_option("--op");
  cmd->callback([&action, o, cmd, op_option] {
    o->op_given = op_option->count() > 0 || cmd->get_option("--N")->count() > 0 ||
                  cmd->get_option("--K")->count() > 0;
    action = [o] { return run_tune(*o); };
  });
}

}  // namespace dietcode::tool
