// `dietcode tune --report DIR`: a self-contained HTML page about a tuning run, with
// plots drawn by gnuplot beside it:
//   - the tuning curve: best geomean GFLOP/s over the declared shapes vs trials
//   - GFLOP/s vs sequence length for each module and each peer (from the benchmark)
//   - the share of declared shapes each selected micro-kernel serves
//   - the cost model's predicted vs measured throughput (held-out records)
#pragma once

#include <string>
#include <vector>

#include "benchmark/result.h"
#include "runtime/module.h"
#include "tune/records.h"

namespace dietcode::report {

struct OperatorResult {
  std::string name;                         // the operator's name in the workload
  runtime::ModuleSpec module;               // the tuned module
  std::vector<tune::TuningRecord> records;  // every record of its tuning, in order
  int threads = 1;
};

struct TuningReportInput {
  std::string workload;
  std::vector<OperatorResult> operators;
  const bench::BenchResult* bench = nullptr;  // null when the benchmark was skipped
};

// Writes DIR/index.html and the plot files it references (created with gnuplot).
// Throws dietcode::Error if DIR cannot be written or gnuplot fails.
void write_tuning_report(const TuningReportInput& input, const std::string& dir);

}  // namespace dietcode::report
