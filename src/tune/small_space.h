// DietCode's joint tuning for the schedule kinds whose space is small enough to list:
// row operators (RowSchedule) and fused attention (AttentionSchedule). The same method
// as for contractions (../../shared/DIETCODE.md), in the form a small space allows:
//
//   space       every valid schedule of a grid (row: rows per task x unroll x reduction
//               passes; attention: query tile x key block x unroll x parallel axis), the
//               parallel choices only when threads > 1; no shape enters it
//   cost model  predicted(k, S) = f(k) * occ(S, k) * pad(S, k): f, the micro-kernel's
//               intrinsic speed, measured at its S* (the declared shape where occ * pad is
//               highest) and divided by occ * pad there; for kernels not measured yet, the
//               XGBoost f_MK of the contraction tuner (tune/cost_model.h) on this kind's
//               features once enough records exist, else the mean
//               pad: row operators lose the masked tail vector of each row; attention the
//               query-tile lanes past T and the unrolled keys past T
//               occ: tasks (row tasks, heads, heads x query tiles) over the cores
//   search      rounds of the unmeasured kernels with the best fitness (the joint search's
//               max_S predicted(S) / best_predicted(S)), each measured at its S*
//   selection   the finals, the greedy cover and the dispatch tree of every joint run
//               (tune/trials.h)
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ops/spec.h"
#include "schedule/any_schedule.h"
#include "tune/analysis.h"
#include "tune/measure.h"
#include "tune/records.h"
#include "tune/tuner.h"

namespace dietcode::tune {

// What a row or attention kernel's cost depends on at one shape.
struct KindExtents {
  int64_t rows = 1;    // row operator: rows; attention: slices (batch x heads)
  int64_t length = 1;  // row operator: row length; attention: T
  int64_t depth = 1;   // attention: head size D
};

class SmallSpace {
 public:
  // Throws dietcode::Error for a contraction (its space is tune/search_space.h).
  SmallSpace(const ops::OperatorSpec& op, schedule::Isa isa, int threads);

  const std::vector<schedule::AnySchedule>& kernels() const { return kernels_; }
  KindExtents extents(const std::vector<int64_t>& shape) const;
  double pad(const schedule::AnySchedule& k, const KindExtents& e) const;
  int64_t tasks(const schedule::AnySchedule& k, const KindExtents& e) const;
  std::vector<float> features(const schedule::AnySchedule& k, const KindExtents& e) const;

 private:
  te::Operator op_;
  schedule::Kind kind_;
  int64_t width_;  // vector lanes
  std::vector<schedule::AnySchedule> kernels_;
};

// Trials of a joint run over `space`: the budget, or the whole space when it is smaller.
inline int64_t small_space_budget(const TuneOptions& o, const SmallSpace& space) {
  return std::min<int64_t>(o.trials, int64_t(space.kernels().size()));
}

// The joint run for a row operator or fused attention (called by tune()).
TuneReport tune_small_space(const TuneOptions& o, RecordFile& records, Measurer& measurer);

}  // namespace dietcode::tune
