// The auto-scheduler end to end: records -> cost model -> search -> measurement ->
// selection -> dispatch tree -> module.
//
//   joint      DietCode: one search over the shape-generic space for all declared
//              shapes, `trials` measurements in total
//   per-shape  the Ansor-style baseline: each shape tuned alone over the divisor
//              space, `trials_per_shape` measurements each, one model per shape
//
// Every measurement is appended to the records file before the next one starts; a
// run killed at any point and started again with the same records file continues
// where it stopped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/spec.h"
#include "runtime/module.h"
#include "tune/finalists.h"
#include "tune/measure.h"
#include "tune/progress.h"
#include "tune/records.h"
#include "tune/search.h"

namespace dietcode::tune {

struct TuneOptions {
  ops::OperatorSpec op;
  bool per_shape = false;
  int64_t trials = 1000;             // joint: in total
  int64_t trials_per_shape = 1000;   // per-shape: for each shape
  std::vector<int64_t> per_shape_m;  // per-shape: the M values tuned (default: all declared)
  int threads = 1;
  std::string records_path;     // required; resumed when it exists
  std::string warm_start_path;  // records of another run/machine: cost-model data only
  int max_kernels = 8;          // most micro-kernels a module selects
  // Most packed layouts of the constant weights a module's kernels may read: the module
  // keeps one packed copy of the weights per layout (0: no limit).
  int max_weight_layouts = 2;
  SearchParams search;
  FinalistParams finalists;  // joint: the side-by-side re-measurement before selection
  MeasureOptions measure;    // threads and worker path are filled in by tune()
  uint64_t seed = 1;
  bool quiet = false;
  std::string label;                // prefixes progress lines (the operator's name in a workload)
  const WholeRun* whole = nullptr;  // the model's run this is a part of (progress only)
  // Names recorded in the module's provenance.
  std::string name, workload;
};

struct TuneReport {
  runtime::ModuleSpec module;
  int64_t trials_this_run = 0, trials_total = 0, errors_total = 0;
  double wall_seconds = 0;  // this run
  // per-shape: wall seconds spent on each tuned shape in this run (0 if resumed done)
  std::vector<std::pair<int64_t, double>> shape_seconds;
  std::vector<std::string> notes;
};

// Throws dietcode::Error for bad options or records.
TuneReport tune(const TuneOptions& options);

// The trials tune(options) runs when nothing is resumed: the budget, or fewer where the
// operator's whole space is smaller (row operators, attention).
int64_t trial_budget(const TuneOptions& options);

// The cost model's quality on held-out records: trained on ~80% (by schedule, so a
// kernel is never on both sides), pairwise ranking accuracy of predicted vs measured
// throughput on the rest.
struct ModelEvaluation {
  size_t train = 0, test = 0;
  double accuracy = 0;
  double accuracy_beyond_noise = 0;  // on pairs whose measurements differ by > 5%
  bool learned = false;  // false: too few records to train f_MK (predictions = occ * pad)
  // Per held-out record: predicted and measured GFLOP/s at its shape, its origin.
  std::vector<double> predicted, measured;
  std::vector<std::string> origins;
};
ModelEvaluation evaluate_cost_model(const ops::OperatorSpec& op, int threads,
                                    const std::vector<TuningRecord>& records);

// The records file's identity of a workload: operator, threads, and how weights were
// measured (cold: MeasureOptions::cold_weights).
nlohmann::json workload_json(const ops::OperatorSpec& op, int threads, bool cold_weights = false);

}  // namespace dietcode::tune
