#include "workflow/tune_workload.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "benchmark/encoder_bench.h"
#include "benchmark/harness.h"
#include "benchmark/report.h"
#include "benchmark/workloads.h"
#include "report/tuning_report.h"
#include "support/error.h"
#include "tune/machine.h"
#include "tune/records.h"
#include "workflow/refine_model.h"

namespace dietcode::workflow {

namespace fs = std::filesystem;

namespace {

// The workload: the one operator, a spec file, or a preset.
tune::WorkloadSpec resolve_workload(const TuneWorkloadOptions& o) {
  if (o.op) return {"operator", {{"operator", *o.op}}};
  std::string name = o.workload.empty() ? "bert-base" : o.workload;
  return fs::path(name).extension() == ".json" ? tune::load_workload_spec(name)
                                               : tune::preset_workload(name);
}

void check_options(const TuneWorkloadOptions& o) {
  if (o.tune.threads < 1) user_error("--threads {}: expected >= 1", o.tune.threads);
  if (o.trials < 0) user_error("--trials {}: expected >= 1", o.trials);
}

// Where modules and records go: one module file for one operator; a folder of
// <operator>.module.json and <operator>.records.jsonl for a workload. Creates the folder.
std::string output_path(const TuneWorkloadOptions& o, const tune::WorkloadSpec& w) {
  const bool single = o.op.has_value();
  std::string out = o.out;
  if (out.empty()) out = single ? "operator.module.json" : "dietcode-out/" + w.name;
  fs::path out_dir = single ? fs::path(out).parent_path() : fs::path(out);
  if (!out_dir.empty()) {
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    if (ec)
      user_error("--out {}: cannot create the folder {}: {}", out, out_dir.string(), ec.message());
  }
  if (!single && !o.tune.records_path.empty())
    user_error(
        "--records names one file; a workload of {} operators keeps its records in the "
        "--out folder ({})",
        w.operators.size(), out);
  return out;
}

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

// How one operator of the workload is tuned, and where its module and records go.
struct OperatorRun {
  tune::TuneOptions options;
  std::string module_path;
};

// `index`: the operator's place in `w`.
OperatorRun operator_run(const TuneWorkloadOptions& o, const tune::WorkloadSpec& w, size_t index,
                         const std::string& out) {
  const tune::WorkloadOperator& op = w.operators[index];
  const bool single = o.op.has_value();
  OperatorRun run;
  tune::TuneOptions& t = run.options;
  t = o.tune;
  t.op = op.op;
  t.trials =
      o.trials > 0 ? o.trials : (single ? kSingleOperatorTrials : kWorkloadTrialsPerOperator);
  t.name = op.name;
  t.workload = w.name;
  if (w.cold_weights) t.measure.cold_weights = true;
  // "[3/6] out": where this operator stands in the whole workload, on every progress line.
  t.label = single ? "" : fmt::format("[{}/{}] {}", index + 1, w.operators.size(), op.name);
  run.module_path = single ? out : (fs::path(out) / (op.name + ".module.json")).string();
  if (single && t.records_path.empty()) t.records_path = out + ".records.jsonl";
  if (!single) t.records_path = (fs::path(out) / (op.name + ".records.jsonl")).string();
  return run;
}

// One operator tuned into its module file.
TunedOperator tune_operator(const TuneWorkloadOptions& o, const std::string& name,
                            const OperatorRun& run) {
  TunedOperator tuned;
  tuned.name = name;
  tuned.module_path = run.module_path;
  tuned.records_path = run.options.records_path;
  if (!o.tune.quiet)
    fmt::print(stderr, "tuning {} ({}, {} threads) -> {}\n", name, run.options.op.describe(),
               run.options.threads, tuned.module_path);
  tuned.report = tune::tune(run.options);
  runtime::save_module_spec(tuned.report.module, tuned.module_path);
  print_summary(tuned.report, name, tuned.module_path);
  return tuned;
}

// The modules against the vendor libraries, each on its own operator, at the bench_m
// lengths it declares. Modules with an epilogue the peers' composition lacks (anything but
// bias, bias+gelu and bias+residual) are left out. Empty when nothing is left to measure.
std::optional<bench::BenchResult> bench_modules(const TuneWorkloadOptions& o,
                                                const std::vector<TunedOperator>& tuned,
                                                bool cold_weights) {
  bench::BenchOptions b;
  b.layers = bench::LayerSource::kEachModule;
  b.threads = o.tune.threads;
  b.quiet = o.tune.quiet;
  b.sweep = false;
  b.seconds_per_measurement = o.bench_seconds;
  b.cold_weights = cold_weights;  // as the modules were tuned
  b.peers_dir = bench::default_peers_dir();
  int64_t m_max = 0;
  for (const TunedOperator& op : tuned) {
    const runtime::ModuleSpec& spec = op.report.module;
    if (schedule::kind_of_operator(spec.op) != schedule::Kind::Contraction) {
      fmt::print(
          "note: {} is a {} operator; the final benchmark compares products with the vendor "
          "libraries (`dietcode bench --workload {}` measures it against oneDNN)\n",
          op.name, spec.op.op, spec.op.op == "attention" ? "bert-attention" : "bert-elementwise");
      continue;
    }
    try {
      bench::layer_for_operator(op.name, spec.op);
    } catch (const Error& e) {
      fmt::print("note: {} is not benchmarked: {}\n", op.name, e.what());
      continue;
    }
    b.modules.push_back({op.name, spec});
    m_max = std::max(m_max, spec.op.m_max);
  }
  for (int64_t m : o.bench_m)
    if (m <= m_max) b.t_values.push_back(m);
  if (!o.bench || b.modules.empty() || b.t_values.empty()) return std::nullopt;
  if (!o.tune.quiet) fmt::print(stderr, "measuring the modules against the vendor libraries\n");
  bench::BenchResult result = bench::run_bench(b);
  fmt::print("{}", bench::format_table(result));
  return result;
}

void write_report(const TuneWorkloadOptions& o, const TuneWorkloadResult& r) {
  report::TuningReportInput input;
  input.workload = r.workload.name;
  input.bench = r.bench ? &*r.bench : nullptr;
  for (const TunedOperator& op : r.operators) {
    report::OperatorResult result;
    result.name = op.name;
    result.module = op.report.module;
    result.records = tune::read_records_any_machine(op.records_path);
    result.threads = o.tune.threads;
    input.operators.push_back(std::move(result));
  }
  report::write_tuning_report(input, o.report_dir);
  fmt::print("report: {}/index.html\n", o.report_dir);
}

}  // namespace

TuneWorkloadResult tune_workload(const TuneWorkloadOptions& o) {
  TuneWorkloadResult r;
  r.workload = resolve_workload(o);
  check_options(o);
  if (o.refine) {
    // A model directory: the encoder's operators, by the names a model loads them by.
    std::set<std::string> names;
    for (const tune::WorkloadOperator& w : r.workload.operators) names.insert(w.name);
    for (const char* need : {"qkv", "attention", "out", "ln", "ffn1", "ffn2"})
      if (o.op || !names.count(need))
        user_error(
            "--refine decides a model's dispatch inside the model: a workload of the encoder's "
            "operators (bert-base, or a spec naming qkv, attention, out, ln, ffn1 and ffn2), "
            "not {}",
            o.op ? std::string("--op") : r.workload.name);
  }
  const std::string out = output_path(o, r.workload);
  // Every operator's run first, for one progress bar across all of them.
  std::vector<OperatorRun> runs;
  tune::WholeRun whole;
  for (size_t i = 0; i < r.workload.operators.size(); ++i) {
    runs.push_back(operator_run(o, r.workload, i, out));
    whole.total += tune::trial_budget(runs.back().options);
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs.size() > 1) runs[i].options.whole = &whole;
    r.operators.push_back(tune_operator(o, r.workload.operators[i].name, runs[i]));
    whole.before += tune::trial_budget(runs[i].options);
    whole.ran_before += r.operators.back().report.trials_this_run;
  }
  if (o.refine) {
    RefineOptions refine;
    refine.model_dir = out;
    refine.weights = bench::random_model_weights(out, 12, o.tune.quiet);
    refine.threads = o.tune.threads;
    refine.quiet = o.tune.quiet;
    if (!o.tune.quiet) fmt::print(stderr, "refining the model's dispatch inside the model\n");
    fmt::print("refined inside the model: {}", format_refine_result(refine, refine_model(refine)));
  }
  // The whole encoder first, in a process where no vendor library has started its
  // threads yet: the GEMM peers' pools (loaded by bench_modules, never unloaded) keep
  // spinning on a core after their calls and halved ONNX Runtime's two-thread speed.
  if (o.bench && r.workload.name == "bert-base" && !o.encoder_layers.empty()) {
    bench::EncoderBenchOptions e;
    e.model_dir = out;
    e.layers = o.encoder_layers;
    e.threads = {o.tune.threads};
    e.lengths = o.bench_m;
    e.quiet = o.tune.quiet;
    if (!o.tune.quiet)
      fmt::print(stderr, "measuring the whole encoder against ONNX Runtime and libtorch\n");
    r.encoder = bench::run_encoder_bench(e);
  }
  r.bench = bench_modules(o, r.operators, r.workload.cold_weights || o.tune.measure.cold_weights);
  if (r.encoder) {
    fmt::print("{}", bench::format_encoder_table(*r.encoder));
    fmt::print("run it: dietcode run {} --weights {}/random-{}-layers.safetensors --seq 37\n", out,
               out, *std::max_element(o.encoder_layers.begin(), o.encoder_layers.end()));
  }
  if (!o.report_dir.empty()) write_report(o, r);
  return r;
}

void evaluate_model(const TuneWorkloadOptions& o) {
  resolve_workload(o);  // a bad workload is reported first, as by tune_workload
  check_options(o);
  if (!o.op || o.tune.records_path.empty())
    user_error("--evaluate-model needs --op ... and --records FILE");
  tune::RecordFile records = tune::RecordFile::open(
      {o.tune.records_path, tune::workload_json(*o.op, o.tune.threads, o.tune.measure.cold_weights),
       tune::this_machine()});
  tune::ModelEvaluation e = tune::evaluate_cost_model(*o.op, o.tune.threads, records.records());
  fmt::print(
      "cost model on {}: trained on {} records, pairwise ranking accuracy {:.3f} on {} "
      "held-out records ({:.3f} on the pairs that differ by more than 5%)\n",
      o.tune.records_path, e.train, e.accuracy, e.test, e.accuracy_beyond_noise);
}

}  // namespace dietcode::workflow
