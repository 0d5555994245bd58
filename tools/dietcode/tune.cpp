// `dietcode tune`: the auto-scheduler. Joint (DietCode) tuning over all declared
// shapes, or the per-shape (Ansor-style) baseline; writes a module file.
#include <fmt/format.h>

#include <memory>

#include "support/error.h"
#include "support/parse.h"
#include "tools/dietcode/operator_options.h"
#include "tools/dietcode/subcommands.h"
#include "tune/tuner.h"

namespace dietcode::tool {

namespace {

struct TuneCliOptions {
  OperatorOptions op;
  tune::TuneOptions tune;
  std::string out;
  bool evaluate_model = false;
};

int run_tune(TuneCliOptions o) {
  o.tune.op = o.op.spec();
  if (o.tune.per_shape) o.tune.per_shape_m = o.op.m_values();
  if (o.evaluate_model) {
    tune::RecordFile records = tune::RecordFile::open(
        {o.tune.records_path, tune::workload_json(o.tune.op, o.tune.threads), tune::this_machine()});
    tune::ModelEvaluation e =
        tune::evaluate_cost_model(o.tune.op, o.tune.threads, records.records());
    fmt::print("cost model on {}: trained on {} records, pairwise ranking accuracy {:.3f} on {} "
               "held-out records\n",
               o.tune.records_path, e.train, e.accuracy, e.test);
    return 0;
  }
  if (o.out.empty()) user_error("--out: the module file to write is required");
  tune::TuneReport r = tune::tune(o.tune);
  runtime::save_module_spec(r.module, o.out);
  fmt::print("tuned {} ({} mode, {} threads)\n", o.tune.op.describe(),
             o.tune.per_shape ? "per-shape" : "joint", o.tune.threads);
  fmt::print("trials: {} in total, {} this run, {} errors; wall time this run {:.1f} s\n",
             r.trials_total, r.trials_this_run, r.errors_total, r.wall_seconds);
  for (const auto& [m, s] : r.shape_seconds) fmt::print("  M={}: {:.1f} s\n", m, s);
  for (const std::string& n : r.notes) fmt::print("{}\n", n);
  for (size_t i = 0; i < r.module.kernels.size(); ++i)
    fmt::print("kernel {}: {}\n", i, schedule::to_json_text(r.module.kernels[i]));
  fmt::print("dispatch:\n{}", r.module.dispatch.describe({"M"}));
  fmt::print("module written to {}\n", o.out);
  return 0;
}

}  // namespace

void register_tune(CLI::App& app, Action& action) {
  auto o = std::make_shared<TuneCliOptions>();
  o->op.m = "1..128";
  CLI::App* cmd = app.add_subcommand(
      "tune", "auto-schedule an operator for all its shapes (DietCode) or shape by shape");
  o->op.add_to(*cmd);
  cmd->add_option("--trials", o->tune.trials, "joint: measured trials in total")
      ->capture_default_str();
  cmd->add_flag("--per-shape", o->tune.per_shape,
                "the Ansor-style baseline: tune each M of --M alone over its divisors");
  cmd->add_option("--trials-per-shape", o->tune.trials_per_shape,
                  "per-shape: measured trials for each shape")
      ->capture_default_str();
  cmd->add_option("--records", o->tune.records_path,
                  "tuning records file (created, or resumed when it exists)")
      ->required();
  cmd->add_option("--out", o->out, "the module file to write");
  cmd->add_option("--threads", o->tune.threads, "threads of the tuned kernels")
      ->capture_default_str();
  cmd->add_option("--warm-start", o->tune.warm_start_path,
                  "records of another run or machine, used to train the cost model only");
  cmd->add_option("--max-kernels", o->tune.max_kernels, "most micro-kernels in the module")
      ->capture_default_str();
  cmd->add_option("--workers", o->tune.measure.workers,
                  "measurement worker processes (compile in parallel)")
      ->capture_default_str();
  cmd->add_option("--population", o->tune.search.population, "search population")
      ->capture_default_str();
  cmd->add_option("--generations", o->tune.search.generations, "generations per round")
      ->capture_default_str();
  cmd->add_option("--measure-per-round", o->tune.search.measure_per_round,
                  "measurements per search round")
      ->capture_default_str();
  cmd->add_option("--probe-fraction", o->tune.search.shape_probe_fraction,
                  "share of each round measuring kernels on declared shapes (0: the paper)")
      ->capture_default_str();
  cmd->add_option("--random-fraction", o->tune.search.random_fraction,
                  "share of each round drawn at random from the space (1: no search, e.g. to "
                  "collect a cost-model evaluation set)")
      ->capture_default_str();
  cmd->add_option("--seed", o->tune.seed, "random seed")->capture_default_str();
  cmd->add_flag("--evaluate-model", o->evaluate_model,
                "report the cost model's held-out ranking accuracy on --records and exit");
  cmd->add_flag("--quiet", o->tune.quiet, "no progress on stderr");
  cmd->callback([&action, o] { action = [o] { return run_tune(*o); }; });
}

}  // namespace dietcode::tool
