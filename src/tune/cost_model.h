// The cost model (../../shared/DIETCODE.md): predicted throughput of micro-kernel M
// on shape S = f_MK(M) * occ(S, M) * pad(S, M).
//
//   micro_kernel_features   a flat float vector describing M's program (tiles, blocks,
//                           vector ops, bytes per level, intensity, registers, tasks)
//   ThroughputModel         f_MK: XGBoost regression (Debian's libxgboost, C API) from
//                           features to intrinsic throughput; a constant until trained
//                           on enough measurements
//   CostModel               both halves together, over a fixed list of shapes
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/contraction.h"
#include "schedule/micro_kernel.h"
#include "tune/analysis.h"

namespace dietcode::tune {

// Names of the features, in order (for reports and tests).
const std::vector<std::string>& feature_names();
// The feature vector of a micro-kernel, evaluated at the extents `at` (its S*).
std::vector<float> micro_kernel_features(const schedule::MicroKernelSchedule& s,
                                         const Extents& at, int threads);

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

}  // namespace dietcode::tune
