// The space of micro-kernels the tuner searches, in two flavours:
//
//   ShapeGeneric  DietCode's: tile sizes are free numbers, capped by the largest extent
//                 over all declared shapes and biased to what fits the hardware (vector
//                 width, register file, cache sizes, core count), not to any shape.
//   Divisors      Ansor's (the per-shape baseline): tile sizes drawn from the divisors
//                 of one concrete shape's extents.
//
// Both sample valid schedules (every result passes schedule::bind) and mutate one:
// given a shape the caller picked (slow shapes more often), move factors between the
// tile levels of one axis so the schedule fits that shape better.
#pragma once

#include <array>
#include <optional>
#include <random>
#include <vector>

#include "ops/contraction.h"
#include "schedule/micro_kernel.h"
#include "te/tensor.h"
#include "tune/analysis.h"

namespace dietcode::tune {

enum class SpaceKind { ShapeGeneric, Divisors };

class SearchSpace {
 public:
  // `shapes`: the shapes tuned for (one shape for Divisors). `cold_weights`: each call
  // meets its constant operand in memory, not in cache (MeasureOptions::cold_weights, a
  // model's layers); it orders the seeds. Throws dietcode::Error if no micro-kernel is
  // valid for the operator.
  SearchSpace(const te::Operator& op, schedule::Isa isa, int threads,
              std::vector<std::vector<int64_t>> shapes, SpaceKind kind, bool cold_weights = false);

  schedule::MicroKernelSchedule sample(std::mt19937_64& rng) const;
  // A valid neighbour of `s` tuned toward shape `shape_index`; nullopt if none found.
  std::optional<schedule::MicroKernelSchedule> mutate(std::mt19937_64& rng,
                                                      const schedule::MicroKernelSchedule& s,
                                                      size_t shape_index) const;
  // Ansor-style seeds from sketch rules: for each declared shape, the micro-kernels
  // analysis says fit it: tile heights mr that cover its M with little padding (at most
  // kSeedPadding wasted rows), for each the widest NR tile the register file holds
  // beside mr rows of accumulators (three heights, those whose tile can use the most of
  // the multiply-add rate first, then the tallest), a k-block whose A and B micro-panels stay in
  // L1, m and n blocks whose packed panels stay in L2 (split over the cores when threads > 1,
  // parallel over M when M gives every core a task, else over N), the BLIS loop order; for a
  // constant B and at most kStreamingRows rows (B streams from memory), each walking four ranges of
  // k at once (k_streams), the tallest also with one; with cold weights and at most kPrefetchRows
  // rows every outer-product seed prefetches B (kSeedPrefetch; at most kPlainPrefetchRows rows
  // the first seed also without it, second), and past kStreamingRows rows
  // every seed with m the inner tile loop prefetches the next tile's B (prefetch_next); for K
  // from kDeepK on the first height also with k blocks of about kDeepK and A read in place,
  // first (with cold weights past kStreamingRows rows, second, behind the same tile with m
  // the inner tile loop); where A and B both run
  // along k and N is at most kDotSeedColumns, a tile of dot products. A B that changes per call
  // with rows along n (S V) is read in place, and A with it; a seed in place of at most
  // kFewTilesPerHead multiply-adds per head comes first with the heads innermost, then as usual.
  // Every seed is valid (schedule::bind); deduplicated; ordered so that a prefix spreads over the
  // shapes (each shape's best seed first, with its twin without the prefetch where there is
  // one; the kSeedShapesDense smallest shapes, then shapes in
  // geometric order, then from the ends inward).
  std::vector<schedule::MicroKernelSchedule> seeds_for_shapes() const;
  // The same seeds, each with the index of the declared shape it was made for: the tuner
  // measures a seed there (a streaming tile for M = 1 says little at its best fit).
  struct RuleSeed {
    schedule::MicroKernelSchedule schedule;
    size_t shape;
  };
  std::vector<RuleSeed> rule_seeds() const;
  static constexpr double kSeedPadding = 0.125;
  // A seed's tile heights rank by the share of the multiply-add rate the widest tile
  // beside them can use: full with kSeedFullTile of the most accumulators any tile the
  // registers hold (AVX-512: 21 of 28; AVX2: 9 of 12) and kSeedFmasPerLoad multiply-adds
  // per loaded element (8 x 48: 24 / 11; 16 x 16: 16 / 17, load-bound).
  static constexpr double kSeedFullTile = 0.75;
  static constexpr double kSeedFmasPerLoad = 1.5;
  // Rows up to which a product of constant fp32 B is bound by reading B (2 * M flops per
  // 4 bytes of B vs a core's ~7 flops per byte of DRAM bandwidth).
  static constexpr int64_t kStreamingRows = 16;
  // Rows up to which, with cold weights, a constant B's seeds prefetch it kSeedPrefetch
  // k-steps ahead (schedule::MicroKernelSchedule::prefetch_b): B then still comes from
  // memory faster than the hardware prefetcher alone brings it.
  static constexpr int64_t kPrefetchRows = 32;
  static constexpr int64_t kSeedPrefetch = 32;
  // Rows up to which the first of those seeds also comes without the prefetch, second.
  static constexpr int64_t kPlainPrefetchRows = 2;
  // k-block of the deep seed (long k blocks, A read in place) for K from it on.
  static constexpr int64_t kDeepK = 768;
  // Warm constant B and all of M in one row of tiles: the deep seed is seeded first with
  // tile-wide B panels, at most this many vectors wide, then in vector panels.
  static constexpr std::array<int64_t, 2> kTilePanelVectors{4, 6};
  // Shapes whose seeds come first: the smallest kSeedShapesDense (as the finals sample
  // them: FinalistParams::dense), then kSeedShapesGeometric spread geometrically.
  static constexpr int kSeedShapesDense = 16;
  static constexpr int kSeedShapesGeometric = 12;
  // N up to which a shape gets a dot-product seed (Q K^T of a short sequence: an outer-
  // product tile would pack B and pad it to NR columns), first among its seeds up to
  // kDotFirstColumns.
  static constexpr int64_t kDotSeedColumns = 16;
  static constexpr int64_t kDotFirstColumns = 8;
  // Multiply-adds per head up to which a batched product's seeds in place also come with
  // the heads innermost (S V at T <= 16: 16 x 64 x 16).
  static constexpr int64_t kFewTilesPerHead = 16 * 64 * 16;

  // One shape's seeds, best first, before rule_seeds drops those an earlier shape has.
  std::vector<schedule::MicroKernelSchedule> seeds_for(const Extents& e) const;
  const ShapeExtents& extents() const { return extents_; }
  const te::Operator& op() const { return op_; }
  SpaceKind kind() const { return kind_; }
  // The per-core L1 data and L2 sizes the blocks are sized to: the host's
  // (host_cache_sizes), else 32 KiB and 1 MiB.
  int64_t l1_bytes() const { return l1_bytes_; }
  int64_t l2_bytes() const { return l2_bytes_; }

 private:
  bool valid(const schedule::MicroKernelSchedule& s) const;
  std::vector<int64_t> mr_choices(int64_t vectors, const Extents* fit) const;
  std::vector<int64_t> vector_choices(const Extents* fit) const;
  // Column counts of dot-product tiles (vector_axis k) for this shape's N, or all.
  std::vector<int64_t> dot_columns(const Extents* fit) const;
  std::vector<int64_t> kc_choices(const Extents* fit) const;
  std::vector<int64_t> mc_choices(int64_t mr, int64_t kc, const Extents* fit) const;
  std::vector<int64_t> nc_choices(int64_t nr, int64_t kc, const Extents* fit) const;
  void sample_knobs(std::mt19937_64& rng, schedule::MicroKernelSchedule& s) const;

  te::Operator op_;
  ops::Contraction c_;
  bool dot_;        // A and B both contiguous along k: dot-product tiles apply
  bool b_along_n_;  // B's rows contiguous along n: B may be read in place (PackB::Direct)
  schedule::VectorIsa vec_;
  int threads_;
  ShapeExtents extents_;
  Extents max_;  // largest extent of each axis over the shapes
  SpaceKind kind_;
  bool cold_weights_;
  int64_t l1_bytes_, l2_bytes_;
};

}  // namespace dietcode::tune
