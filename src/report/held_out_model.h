// The cost model judged on records it was not trained on, for the report's scatter plot:
// the same split and the same model as `dietcode tune --evaluate-model`
// (tune::evaluate_cost_model): trained on the correct records whose schedule's FNV-1a
// hash is not 0 mod 5 (~80%), asked to predict the rest (a kernel is never on both
// sides).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ops/spec.h"
#include "tune/records.h"

namespace dietcode::report {

struct HeldOutPoint {
  double predicted_gflops = 0;  // f_MK * occ * pad at the record's shape
  double measured_gflops = 0;
  std::string origin;  // the record's origin: joint, probe, per-shape
};

struct HeldOutModel {
  size_t train = 0;
  std::vector<HeldOutPoint> test;
  // false: fewer than ThroughputModel::kMinSamples training records, so f_MK is a
  // constant and predictions differ only by occ * pad.
  bool learned = false;
  double ranking_accuracy = 0;       // pairwise, as --evaluate-model prints
  double median_relative_error = 0;  // median |predicted - measured| / measured
};

HeldOutModel held_out_model(const ops::OperatorSpec& op, int threads,
                            const std::vector<tune::TuningRecord>& records);

}  // namespace dietcode::report
