// The analytical half of the cost model (../../shared/DIETCODE.md, "Cost model"):
// how much of a micro-kernel's work on a shape is useful (pad) and how evenly its
// parallel tasks fill the cores (occ). Pure functions of schedule and extents.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/contraction.h"
#include "schedule/micro_kernel.h"
#include "te/tensor.h"

namespace dietcode::tune {

// The GEMM extents of an operator at one shape.
struct Extents {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  double flops() const { return 2.0 * double(batch) * double(m) * double(n) * double(k); }
};

// Evaluates the contraction's extents at each shape once.
class ShapeExtents {
 public:
  ShapeExtents(const te::Operator& op, const std::vector<std::vector<int64_t>>& shapes);
  const Extents& operator[](size_t i) const { return extents_[i]; }
  size_t size() const { return extents_.size(); }
  static Extents at(const ops::Contraction& c, const te::Operator& op,
                    const std::vector<int64_t>& shape);

 private:
  std::vector<Extents> extents_;
};

// Rows of tile work for m rows. An outer-product tile (vector_axis n) runs the m mod MR
// rows at M's edge as the passes of schedule::edge_passes, each costing its rows and
// kSubTileRows more (it streams B again;
// measured on a 768 x 768 dense layer with 6 x 16 tiles: edges of 1, 2 and 4 rows, one
// pass each, took the time of 1.7, 2.3 and 4.1 whole-tile rows), at most MR in all. A
// tile of dot products computes whole tiles (edge rows repeat the last).
constexpr double kSubTileRows = 0.5;
double tile_rows_done(const schedule::MicroKernelSchedule& s, int64_t m);

// Whether two micro-kernels run the same loops on these extents: equal once every cache
// block that spans its whole extent (mc >= m, nc >= n, kc >= k) is taken as one block,
// whatever its size. A measurement of one there is a measurement of the other: at M = 23
// a 12 x 32 tile with mc = 132 and the module's 12 x 32 tile with mc = 108 are one kernel.
bool same_loops_at(const schedule::MicroKernelSchedule& a, const schedule::MicroKernelSchedule& b,
                   const Extents& e);

// Useful fraction of the work: M N / (tile_rows_done(M) x ceil(N/NR) NR).
double pad_ratio(const schedule::MicroKernelSchedule& s, const Extents& e);

// Parallel tasks of the schedule's parallel loop on these extents (1 when serial).
int64_t parallel_tasks(const schedule::MicroKernelSchedule& s, const Extents& e);

// occ = G / (ceil(G/P) * P), with a fitted exponent: occ_fit = occ^alpha. alpha = 1 is
// the ideal machine; the tuner fits alpha from measurements of the same micro-kernel
// at different task counts (OccupancyModel::fit). With one core occ is 1.
struct OccupancyModel {
  int cores = 1;
  double alpha = 1.0;
  double occ(int64_t tasks) const;
  double occ(const schedule::MicroKernelSchedule& s, const Extents& e) const {
    return occ(parallel_tasks(s, e));
  }
  // Samples: (tasks, measured throughput) of one micro-kernel at shapes with the same
  // padding, grouped by kernel. Chooses alpha minimizing the spread of throughput/occ
  // within each group. Leaves alpha unchanged with too few samples.
  struct Sample {
    int group;
    int64_t tasks;
    double throughput;  // FLOP/s divided by pad
  };
  void fit(const std::vector<Sample>& samples);
};

// Up to `count` distinct positions in 0..n-1 spread geometrically, both ends included:
// the i-th is pow(n, i / (count - 1)) - 1 (1-based pow), or the one after the previous
// when that rounds to it; 0..n-1 when count >= n. For the 128 sequence lengths and
// count 12: M = 1, 2, 3, 4, 6, 9, 14, 22, 34, 53, 82, 128. Where a shape's best kernel
// changes fastest (padding and occupancy at small extents) it samples densely.
std::vector<size_t> geometric_positions(size_t n, int count);

}  // namespace dietcode::tune
