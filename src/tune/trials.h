// What every tuning mode and schedule kind shares around the search itself: records in,
// measurements out, the side-by-side finals, the module.
//
//   ok_records / clean_records   the records selection may use / the cost model learns from
//   measure_and_record           a batch of trials measured, each record appended as it ends
//   candidate_scores             score[shape][kernel]: measured medians, else predictions
//   select_with_finals           finals planned and measured side by side (resumable), then
//                                the greedy cover and the dispatch tree: the module
//
// Predictions come from the kind's own cost model through `PredictAt`.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/module.h"
#include "tune/finalists.h"
#include "tune/measure.h"
#include "tune/progress.h"
#include "tune/records.h"
#include "tune/tuner.h"

namespace dietcode::tune {

// Predicted throughput [kernel][shape] of kernels on shapes.
using PredictAt = std::function<std::vector<std::vector<double>>(
    const std::vector<schedule::AnySchedule>&, const std::vector<std::vector<int64_t>>&)>;

// The correct records (with a positive speed): every one may be a selection candidate.
std::vector<const TuningRecord*> ok_records(const std::vector<TuningRecord>& a,
                                            const std::vector<TuningRecord>& b = {});
// What a cost model learns from: the correct records not marked disturbed (a time a
// neighbour inflated would teach it a wrong throughput).
std::vector<const TuningRecord*> clean_records(const std::vector<TuningRecord>& a,
                                               const std::vector<TuningRecord>& b = {});
// Shapes beyond the declared range the dispatcher is also fitted on, so that an
// undeclared shape goes to the kernel the cost model prefers there.
std::vector<std::vector<int64_t>> outside_shapes(const ops::OperatorSpec& op);

// A joint run's progress resumed from its records (the joint trials and their errors),
// with a line saying so when there were any.
void resume_joint_progress(Progress& progress, const RecordFile& records, const TuneOptions& o);
// The run's trial counts into its report.
void count_trials(const Progress& progress, TuneReport& report);
// The records without the finals: what selection plans from, so that a resumed run plans
// the same windows and skips those already measured.
std::vector<TuningRecord> without_finals(const std::vector<TuningRecord>& records);

// One measurement to make, and why.
struct Trial {
  MeasureRequest request;
  Origin origin;
};
TuningRecord to_record(const schedule::AnySchedule& s, const std::vector<int64_t>& shape,
                       Origin origin, const MeasureResult& r);
// Measures a batch and appends every result the moment it is final.
void measure_and_record(Measurer& measurer, RecordFile& records, const std::vector<Trial>& trials,
                        Progress& progress);
// The options' measurement settings with the run's threads and the worker's path.
MeasureOptions measure_options(const TuneOptions& o);

// The candidates' score[declared shape][kernel]: measurement where one exists (the
// median of a kernel's records there), else the prediction.
std::vector<std::vector<double>> candidate_scores(
    const ops::OperatorSpec& op, const PredictAt& predict,
    const std::vector<schedule::AnySchedule>& candidates,
    const std::vector<const TuningRecord*>& records);

// The layout each schedule of an operator packs its constant weights in
// (lower::packed_layout_id: 0 where it reads them as given), each schedule lowered once.
class LayoutIds {
 public:
  explicit LayoutIds(te::Operator op) : op_(std::move(op)) {}
  uint64_t operator()(const schedule::AnySchedule& s);
  std::vector<uint64_t> operator()(const std::vector<schedule::AnySchedule>& kernels);

 private:
  te::Operator op_;
  std::unordered_map<schedule::AnySchedule, uint64_t, schedule::AnyScheduleHash> ids_;
};

// Which of `kernels` a selection may take beside `selected` under the options' budget of
// weight layouts (TuneOptions::max_weight_layouts): those that read the weights as given
// or in a layout `selected` reads, and any while `selected` reads fewer than allowed.
std::vector<bool> within_layout_budget(const TuneOptions& o, LayoutIds& layout_of,
                                       const std::vector<schedule::AnySchedule>& selected,
                                       const std::vector<schedule::AnySchedule>& kernels);

// A module from candidate kernels and their score on every declared shape: the greedy
// cover within the budget of weight layouts; the tree (outside the declared range, by the
// predictions). `layout_of`: a cache of the candidates' layouts (a fresh one when null).
runtime::ModuleSpec build_module(const TuneOptions& o, const PredictAt& predict,
                                 const std::vector<schedule::AnySchedule>& candidates,
                                 const std::vector<std::vector<double>>& score, int max_kernels,
                                 std::vector<std::string>& notes, LayoutIds* layout_of = nullptr);

// The last step of a joint run: finalists planned from `score` (o.finalists), each
// window not yet in the records measured side by side and appended as Origin::Final,
// then the module built from the paired numbers (from `score` alone without finals).
runtime::ModuleSpec select_with_finals(const TuneOptions& o, RecordFile& records,
                                       Measurer& measurer, const PredictAt& predict,
                                       const std::vector<schedule::AnySchedule>& candidates,
                                       const std::vector<std::vector<double>>& score,
                                       std::vector<std::string>& notes);

}  // namespace dietcode::tune
