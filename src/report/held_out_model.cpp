// The report's view of tune::evaluate_cost_model: the same split and model as
// `dietcode tune --evaluate-model`, with per-record points for the scatter plot.
#include "report/held_out_model.h"

#include <algorithm>
#include <cmath>

#include "tune/tuner.h"

namespace dietcode::report {

HeldOutModel held_out_model(const ops::OperatorSpec& spec, int threads,
                            const std::vector<tune::TuningRecord>& records) {
  tune::ModelEvaluation e = tune::evaluate_cost_model(spec, threads, records);
  HeldOutModel out;
  out.train = e.train;
  out.learned = e.learned;
  out.ranking_accuracy = e.accuracy;
  std::vector<double> relative_error;
  for (size_t i = 0; i < e.predicted.size(); ++i) {
    out.test.push_back({e.predicted[i], e.measured[i], e.origins[i]});
    relative_error.push_back(std::abs(e.predicted[i] - e.measured[i]) / e.measured[i]);
  }
  if (!relative_error.empty()) {
    std::sort(relative_error.begin(), relative_error.end());
    out.median_relative_error = relative_error[relative_error.size() / 2];
  }
  return out;
}

}  // namespace dietcode::report
