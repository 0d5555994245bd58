// The cost model (../../shared/DIETCODE.md): predicted throughput of micro-kernel M
// on shape S = f_MK(M) * occ(S, M) * pad(S, M).
//
//   micro_kernel_features   a flat float vector describing M's program (tiles, blocks,
//                           vector ops, bytes per level, intensity, registers, tasks)
//   ThroughputModel         f_MK: XGBoost regression (Debian's libxgboost, C API) from
//                           features to intrinsic throughput; a constant until trained
//                           on enough measurements
//   CostModel               f_MK, occ and pad together for one operator: fitting on
//                           records and every prediction the search, the selection,
//                           the report and the model evaluation use
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/contraction.h"
#include "schedule/micro_kernel.h"
#include "tune/analysis.h"
#include "tune/records.h"

namespace dietcode::tune {

// Names of the features, in order (for reports and tests).
const std::vector<std::string>& feature_names();
// The feature vector of a micro-kernel, evaluated at the extents `at` (its S*).
std::vector<float> micro_kernel_features(const schedule::MicroKernelSchedule& s, const Extents& at,
                                         int threads);

// f_MK. Labels are intrinsic throughputs (GFLOP/s); trained on log-throughput so that
// relative errors count alike for fast and slow kernels.
class ThroughputModel {
 public:
  // Below this many samples, predict() returns a constant and ranking falls to occ*pad.
  static constexpr size_t kMinSamples = 100;

  ThroughputModel();
  ~ThroughputModel();
  ThroughputModel(ThroughputModel&&) noexcept;
  ThroughputModel& operator=(ThroughputModel&&) noexcept;

  // Retrains from scratch on all samples (rows of features, GFLOP/s labels).
  void train(const std::vector<std::vector<float>>& features, const std::vector<double>& gflops);
  std::vector<double> predict(const std::vector<std::vector<float>>& features) const;
  bool trained() const { return booster_ != nullptr; }
  double constant() const { return constant_; }

 private:
  void* booster_ = nullptr;  // BoosterHandle
  double constant_ = 1.0;    // mean label, used until trained
};

// Fraction of pairs with different labels that the predictions order the same way.
// With min_gap > 0, only pairs whose measured values differ by more than that fraction
// count (pairs closer than the timing noise carry no ranking information).
double pairwise_ranking_accuracy(const std::vector<double>& predicted,
                                 const std::vector<double>& measured, double min_gap = 0);

// The argmax_S occ * pad shape of a micro-kernel over candidate extents (ties go to
// the larger shape, by FLOP count): where its measurement says most about f_MK.
size_t best_fit_shape(const schedule::MicroKernelSchedule& s, const ShapeExtents& shapes,
                      const OccupancyModel& occ);

// The whole cost model of one operator at a thread count.
//
// Two forms of prediction, on purpose:
//   predict_generic    DietCode's: f_MK is a property of the micro-kernel alone, its
//                      features evaluated once at the kernel's S*, scaled to each shape
//                      by occ * pad. One f_MK per candidate, so the search can score
//                      a population of thousands over all shapes in one batch.
//   predict_at_shapes  f_MK's features evaluated at each shape (k-remainders, cache
//                      footprints and task counts of that shape), times occ * pad.
//                      Sharper where few candidates meet many shapes: selection, the
//                      probe plan, the dispatch of undeclared shapes, the evaluation.
// Both return GFLOP/s as [kernel][shape].
class CostModel {
 public:
  CostModel(const te::Operator& op, int threads);

  // Fits occ's exponent on kernels measured at several task counts, then f_MK on the
  // intrinsic throughput of every record.
  void fit(const std::vector<const TuningRecord*>& records);

  std::vector<std::vector<double>> predict_generic(
      const std::vector<schedule::MicroKernelSchedule>& kernels, const ShapeExtents& shapes) const;
  std::vector<std::vector<double>> predict_at_shapes(
      const std::vector<schedule::MicroKernelSchedule>& kernels,
      const std::vector<std::vector<int64_t>>& shapes) const;
  // Each record's kernel at the record's shape (predict_at_shapes, one batch).
  std::vector<double> predict_records(const std::vector<const TuningRecord*>& records) const;

  // A measurement's intrinsic throughput: GFLOP/s / (occ * pad), what f_MK learns.
  double intrinsic_gflops(const TuningRecord& r) const;
  Extents extents(const std::vector<int64_t>& shape) const;
  // The shape of `shapes` where a measurement of `s` says most about f_MK (see
  // best_fit_shape).
  size_t best_fit(const schedule::MicroKernelSchedule& s, const ShapeExtents& shapes) const {
    return best_fit_shape(s, shapes, occ_);
  }

  const OccupancyModel& occupancy() const { return occ_; }
  const ThroughputModel& throughput() const { return f_; }
  int threads() const { return threads_; }

 private:
  te::Operator op_;
  ops::Contraction c_;
  int threads_;
  OccupancyModel occ_;
  ThroughputModel f_;
};

}  // namespace dietcode::tune
