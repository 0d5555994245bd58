// `dietcode tune` as one library call: a workload (one operator, a spec file or a preset)
// tuned operator by operator into module files, the modules measured against the vendor
// libraries, and the tuning report written if asked for.
//
// This folder sits above tune/, benchmark/ and report/ (the report reads tune's records
// and cost model, so the loop that ends with the report cannot live in tune/ itself).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "benchmark/encoder_bench.h"
#include "benchmark/result.h"
#include "ops/spec.h"
#include "tune/tuner.h"
#include "tune/workload.h"

namespace dietcode::workflow {

struct TuneWorkloadOptions {
  // One operator (module file `out`, records `<out>.records.jsonl` unless tune.records_path
  // is set), or else a workload: a preset name or a spec file (.json); empty: the preset
  // bert-base (every operator of the encoder: a model directory).
  std::optional<ops::OperatorSpec> op;
  std::string workload;
  // Every operator is tuned with these options; op, trials, records path, names and
  // label are filled in per operator.
  tune::TuneOptions tune;
  int64_t trials = 0;  // 0: kSingleOperatorTrials for one operator, else kWorkloadTrialsPerOperator
  // The module file (one operator; default operator.module.json) or the folder of
  // <operator>.module.json and <operator>.records.jsonl (default dietcode-out/<workload>).
  std::string out;
  // The final benchmark of the modules against the vendor libraries.
  bool bench = true;
  // A spread over 1..128 (small, prime, just off tile multiples, large) that measures in
  // about a minute; `dietcode bench --module` measures every shape.
  std::vector<int64_t> bench_m = {1,  2,  3,  5,  8,  13, 16,  17,  24,
                                  31, 32, 48, 64, 80, 97, 113, 127, 128};
  double bench_seconds = 0.02;  // timed seconds per implementation and shape
  // For a workload that is a model directory (bert-base): the whole encoder against ONNX
  // Runtime and libtorch at these layer counts, at the bench_m lengths.
  std::vector<int64_t> encoder_layers = {1, 12};
  // bert-base: once tuned, the model's dispatch decided again inside the model
  // (refine_model.h, on its twelve layers of random weights) before the tables.
  bool refine = false;
  std::string report_dir;  // empty: no report
};

// Trials per operator when none are given: a preset workload of four BERT layers tunes
// in about five minutes on two cores; one operator gets the paper's budget.
constexpr int64_t kWorkloadTrialsPerOperator = 250;
constexpr int64_t kSingleOperatorTrials = 1000;

struct TunedOperator {
  std::string name;
  std::string module_path, records_path;
  tune::TuneReport report;
};

struct TuneWorkloadResult {
  tune::WorkloadSpec workload;
  std::vector<TunedOperator> operators;
  std::optional<bench::BenchResult> bench;           // empty when the benchmark did not run
  std::optional<bench::EncoderBenchResult> encoder;  // bert-base: the end-to-end table
};

// Tunes every operator (progress on stderr unless tune.quiet, a summary per operator on
// stdout), saves its module, measures the modules against the peers (the table on
// stdout) and writes the report. Throws dietcode::Error for bad options, files or records.
TuneWorkloadResult tune_workload(const TuneWorkloadOptions& options);

// `--evaluate-model`: the cost model's held-out ranking accuracy on one operator's
// records (options.op and options.tune.records_path), printed on stdout.
void evaluate_model(const TuneWorkloadOptions& options);

}  // namespace dietcode::workflow
