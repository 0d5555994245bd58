// `dietcode tune`: the auto-scheduler. A workload (a preset, a spec file, or one
// operator given with --op ...) is tuned operator by operator into module files,
// jointly for all declared shapes (DietCode) or shape by shape (the per-shape
// baseline); then the modules are measured against the vendor libraries.
//
//   dietcode tune                               # preset bert-base-dense, ~5 minutes
//   dietcode tune my-workload.json --trials 500 --out modules/
//   dietcode tune --op dense --N 2304 --K 768 --M 1..128 --trials 1000 --out qkv.module.json
#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "bench/harness.h"
#include "bench/report.h"
#include "support/error.h"
#include "support/parse.h"
#include "tools/dietcode/operator_options.h"
#include "tools/dietcode/subcommands.h"
#include "tune/machine.h"
#include "tune/tuner.h"
#include "report/tuning_report.h"
#include "tune/workload.h"

namespace dietcode::tool {

namespace fs = std::filesystem;

namespace {

// Trials per operator when --trials is not given: a preset workload of four BERT layers
// tunes in about five minutes on two cores; one operator gets the paper's budget.
constexpr int64_t kWorkloadTrialsPerOperator = 250;
constexpr int64_t kSingleOperatorTrials = 1000;

struct TuneCliOptions {
  std::string workload;  // preset name or spec file; empty with --op
  OperatorOptions op;
  bool op_given = false;
  tune::TuneOptions tune;
  int64_t trials = 0;  // 0: the default for the workload's size
  std::string out, report;
  bool evaluate_model = false, no_bench = false;
  double bench_seconds = 0.02;
  // The final benchmark's sequence lengths: a spread over 1..128 (small, prime, just off
  // tile multiples, large) that measures in about a minute; `dietcode bench --module`
  // measures every shape.
  std::string bench_m = "1,2,3,5,8,13,16,17,24,31,32,48,64,80,97,113,127,128";
};

void print_summary(const tune::TuneReport& r, const std::string& name, const std::string& path) {
  fmt::print("{}: {} trials in total ({} this run, {} errors), {:.1f} s this run -> {}\n", name,
             r.trials_total, r.trials_this_run, r.errors_total, r.wall_seconds, path);
  for (const auto& [m, s] : r.shape_seconds) fmt::print("  M={}: {:.1f} s\n", m, s);
  for (const std::string& n : r.notes) fmt::print("  {}\n", n);
  fmt::print("  dispatch:\n");
  std::string tree = r.module.dispatch.describe({"M"});
  size_t start = 0;
  while (start < tree.size()) {
    size_t end = tree.find('\n', start);
    fmt::print("    {}\n", tree.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

int run_tune(TuneCliOptions o) {
  if (!o.workload.empty() && o.op_given)
    user_error("give either a workload ('{}') or --op ..., not both", o.workload);
  // The workload: one operator from the options, a spec file, or a preset.
  tune::WorkloadSpec w;
  bool single = o.op_given;
  if (single) {
    w.name = "operator";
    w.operators.push_back({"operator", o.op.spec()});
  } else {
    std::string name = o.workload.empty() ? "bert-base-dense" : o.workload;
    w = fs::path(name).extension() == ".json" ? tune::load_workload_spec(name)
                                              : tune::preset_workload(name);
  }
  if (o.tune.threads < 1) user_error("--threads {}: expected >= 1", o.tune.threads);
  if (o.trials < 0) user_error("--trials {}: expected >= 1", o.trials);
  if (o.evaluate_model) {
    if (!single || o.tune.records_path.empty())
      user_error("--evaluate-model needs --op ... and --records FILE");
    tune::RecordFile records = tune::RecordFile::open(
        {o.tune.records_path, tune::workload_json(w.operators[0].op, o.tune.threads),
         tune::this_machine()});
    tune::ModelEvaluation e =
        tune::evaluate_cost_model(w.operators[0].op, o.tune.threads, records.records());
    fmt::print("cost model on {}: trained on {} records, pairwise ranking accuracy {:.3f} on {} "
               "held-out records ({:.3f} on the pairs that differ by more than 5%)\n",
               o.tune.records_path, e.train, e.accuracy, e.test, e.accuracy_beyond_noise);
    return 0;
  }
  int64_t trials = o.trials > 0 ? o.trials
                                : (single ? kSingleOperatorTrials : kWorkloadTrialsPerOperator);
  // Where modules and records go: one module file for one operator; a folder of
  // <operator>.module.json and <operator>.records.jsonl for a workload.
  std::string out = o.out;
  if (out.empty()) out = single ? "operator.module.json" : "dietcode-out/" + w.name;
  fs::path out_dir = single ? fs::path(out).parent_path() : fs::path(out);
  if (!out_dir.empty()) {
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    if (ec) user_error("--out {}: cannot create the folder {}: {}", out, out_dir.string(), ec.message());
  }
  if (single && o.tune.records_path.empty()) o.tune.records_path = out + ".records.jsonl";
  if (!single && !o.tune.records_path.empty())
    user_error("--records names one file; a workload of {} operators keeps its records in the "
               "--out folder ({})",
               w.operators.size(), out);
  std::vector<std::pair<std::string, runtime::ModuleSpec>> modules;
  std::vector<std::string> records_paths;
  for (const tune::WorkloadOperator& op : w.operators) {
    tune::TuneOptions t = o.tune;
    t.op = op.op;
    t.trials = trials;
    t.trials_per_shape = o.tune.trials_per_shape;
    if (t.per_shape) t.per_shape_m = o.op.m_values();
    t.name = op.name;
    t.workload = w.name;
    t.label = single ? "" : op.name;
    std::string module_path = single ? out : (fs::path(out) / (op.name + ".module.json")).string();
    if (!single) t.records_path = (fs::path(out) / (op.name + ".records.jsonl")).string();
    if (!o.tune.quiet)
      fmt::print(stderr, "tuning {} ({}, {} threads) -> {}\n", op.name, op.op.describe(),
                 t.threads, module_path);
    records_paths.push_back(t.records_path);
    tune::TuneReport r = tune::tune(t);
    runtime::save_module_spec(r.module, module_path);
    print_summary(r, op.name, module_path);
    modules.push_back({op.name, r.module});
  }
  // The result against the vendor libraries, each module on its own operator.
  bench::BenchOptions b;
  b.workload = "modules";
  b.threads = o.tune.threads;
  b.quiet = o.tune.quiet;
  b.sweep = false;
  b.seconds_per_measurement = o.bench_seconds;
  {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    b.peers_dir = ec ? "peers" : (exe.parent_path() / "peers").string();
  }
  int64_t m_max = 0;
  std::vector<int64_t> bench_m = parse_int_list(o.bench_m, "--bench-M");
  for (auto& [name, spec] : modules) {
    if (spec.op.epilogue != "none") {
      fmt::print("note: {} has epilogue {}; the vendor libraries compute plain products, so it "
                 "is not benchmarked\n",
                 name, spec.op.epilogue);
      continue;
    }
    b.modules.push_back({name, spec});
    m_max = std::max(m_max, spec.op.m_max);
  }
  for (int64_t m : bench_m)
    if (m <= m_max) b.t_values.push_back(m);
  bench::BenchResult result;
  bool benched = !o.no_bench && !b.modules.empty() && !b.t_values.empty();
  if (benched) {
    if (!o.tune.quiet)
      fmt::print(stderr, "measuring the modules against the vendor libraries\n");
    result = bench::run_bench(b);
    fmt::print("{}", bench::format_table(result));
  }
  if (!o.report.empty()) {
    report::TuningReportInput input;
    input.workload = w.name;
    input.bench = benched ? &result : nullptr;
    for (size_t i = 0; i < w.operators.size(); ++i) {
      report::OperatorResult r;
      r.name = w.operators[i].name;
      r.module = modules[i].second;
      r.records = tune::read_records_any_machine(records_paths[i]);
      r.threads = o.tune.threads;
      input.operators.push_back(std::move(r));
    }
    report::write_tuning_report(input, o.report);
    fmt::print("report: {}/index.html\n", o.report);
  }
  return 0;
}

}  // namespace

void register_tune(CLI::App& app, Action& action) {
  auto o = std::make_shared<TuneCliOptions>();
  o->op.m = "1..128";
  // One thread by default: on one core the measurements are reproducible even on a
  // shared machine (several threads there see neighbours take cores; see the README's
  // benchmark notes). --threads N tunes for N threads.
  o->tune.threads = 1;
  CLI::App* cmd = app.add_subcommand(
      "tune",
      "auto-schedule a workload for all its shapes (DietCode) or shape by shape; with no "
      "arguments, the BERT-base dense layers at seq 1..128");
  cmd->add_option("workload", o->workload,
                  "a preset (bert-base-dense, bert-dense-2304x768) or a spec file (.json); "
                  "default bert-base-dense");
  o->op.add_to(*cmd);
  cmd->add_option("--trials", o->trials,
                  "joint: measured trials per operator (default 1000 for --op, 250 per "
                  "operator of a workload)");
  cmd->add_flag("--per-shape", o->tune.per_shape,
                "the Ansor-style baseline: tune each M of --M alone over its divisors");
  cmd->add_option("--trials-per-shape", o->tune.trials_per_shape,
                  "per-shape: measured trials for each shape")
      ->capture_default_str();
  cmd->add_option("--records", o->tune.records_path,
                  "tuning records file for --op (default: <out>.records.jsonl; resumed when it "
                  "exists)");
  cmd->add_option("--out", o->out,
                  "module file (--op) or folder of modules (a workload; default "
                  "dietcode-out/<workload>)");
  cmd->add_option("--threads", o->tune.threads, "threads of the tuned kernels")
      ->capture_default_str();
  cmd->add_option("--warm-start", o->tune.warm_start_path,
                  "records of another run or machine, used to train the cost model only");
  cmd->add_option("--max-kernels", o->tune.max_kernels, "most micro-kernels in a module")
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
  cmd->add_flag("--no-bench", o->no_bench, "do not measure the modules against the peers");
  cmd->add_option("--report", o->report,
                  "write an HTML report with plots (tuning curve, GFLOP/s vs M, kernel shares, "
                  "cost model) to this folder");
  cmd->add_option("--bench-M", o->bench_m,
                  "sequence lengths of the final benchmark (a list or ranges, e.g. 1..128)")
      ->capture_default_str();
  cmd->add_option("--bench-seconds", o->bench_seconds,
                  "timed seconds per implementation and shape in the final benchmark")
      ->capture_default_str();
  cmd->add_flag("--quiet", o->tune.quiet, "no progress on stderr");
  CLI::Option* op_option = cmd->get_option("--op");
  cmd->callback([&action, o, cmd, op_option] {
    o->op_given = op_option->count() > 0 || cmd->get_option("--N")->count() > 0 ||
                  cmd->get_option("--K")->count() > 0;
    action = [o] { return run_tune(*o); };
  });
}

}  // namespace dietcode::tool
