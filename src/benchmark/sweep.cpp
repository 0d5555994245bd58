#include "benchmark/sweep.h"

#include <algorithm>

#include "ops/contraction.h"
#include "support/error.h"
#include "support/int_math.h"

namespace dietcode::bench {

namespace {

using schedule::Axis;
using schedule::ParallelAxis;

// Tile heights up to which the deep variants with tile-wide B panels (warm weights) are
// also tried narrower.
constexpr int64_t kNarrowTilePanelRows = 5;

}  // namespace

std::vector<schedule::MicroKernelSchedule> sweep_grid(const te::Operator& op, schedule::Isa isa,
                                                      int threads, bool cold_weights) {
  ops::Contraction c = ops::match_contraction(op);
  schedule::MaxExtents ext = schedule::max_extents(c, op);
  // Every tile height from 1 to 14 rows, each with the widest NR (a multiple of the
  // vector width, at most 8 vectors) whose accumulators fit the register file: exact
  // heights matter for small M, where a padded tile row is pure waste.
  const schedule::VectorIsa& vec = schedule::vector_isa(isa);
  const bool batched = !c.batch_axes.empty();
  const bool b_direct = !c.b.constant && schedule::b_contiguous_along_n(c);
  std::vector<std::pair<int64_t, int64_t>> tiles;
  for (int64_t mr = 1; mr <= 14; ++mr) {
    int64_t vectors = std::min<int64_t>(8, schedule::max_tile_vectors(mr, vec.registers));
    if (vectors >= 1) tiles.push_back({mr, vectors * vec.width});
    // Where N itself varies (attention's T), narrow tiles too: a wide one would pack
    // and multiply mostly padding at small N.
    if (batched && vectors > 1) tiles.push_back({mr, vec.width});
  }
  std::vector<schedule::MicroKernelSchedule> grid;
  for (auto [mr, nr] : tiles) {
    if (mr > ext.m) continue;
    nr = std::min(nr, round_up(ext.n, vec.width));
    schedule::MicroKernelSchedule base;
    base.isa = isa;
    base.mr = mr;
    base.nr = nr;
    base.kc = std::min<int64_t>(256, ext.k);
    base.unroll_k = 4;
    base.loop_order = {Axis::N, Axis::K, Axis::M};
    base.pack_b = c.b.constant ? schedule::PackB::Prepacked : schedule::PackB::PerBlock;
    base.pack_a = schedule::PackA::Packed;
    std::vector<schedule::MicroKernelSchedule> variants;
    auto clamp_blocks = [&](schedule::MicroKernelSchedule s) {
      s.mc = std::min(s.mc, round_up(ext.m, s.mr));
      s.nc = std::min(s.nc, round_up(ext.n, s.nr));
      return s;
    };
    if (batched) {
      schedule::MicroKernelSchedule s = base;
      s.parallel = ParallelAxis::Batch;
      s.mc = round_up(int64_t{128}, mr);
      s.nc = round_up(int64_t{512}, nr);
      variants.push_back(clamp_blocks(s));
      s.pack_a = schedule::PackA::Direct;
      variants.push_back(clamp_blocks(s));
      // B read in place where its rows run along n (S V): nothing is copied per call.
      if (b_direct) {
        s.pack_b = schedule::PackB::Direct;
        variants.push_back(clamp_blocks(s));
        s.pack_a = schedule::PackA::Packed;
        variants.push_back(clamp_blocks(s));
      }
    } else {
      // Parallel over N blocks (small M: one M block), one or two tasks per thread;
      // with two, the A micro-panel stays in L1 across the N tiles.
      for (int64_t tasks_per_thread : {1, 2}) {
        schedule::MicroKernelSchedule s = base;
        s.parallel = ParallelAxis::N;
        s.nc =
            round_up((ext.n + threads * tasks_per_thread - 1) / (threads * tasks_per_thread), nr);
        s.mc = round_up(int64_t{96}, mr);
        s.inner_tile_loop = tasks_per_thread == 1 ? Axis::M : Axis::N;
        s.pack_a = mr <= 2 ? schedule::PackA::Direct : schedule::PackA::Packed;
        variants.push_back(clamp_blocks(s));
      }
      // Parallel over M blocks (large M).
      schedule::MicroKernelSchedule s = base;
      s.parallel = ParallelAxis::M;
      s.mc = round_up(std::max<int64_t>(mr * 4, 64), mr);
      s.nc = round_up(int64_t{1024}, nr);
      s.inner_tile_loop = Axis::N;
      variants.push_back(clamp_blocks(s));
      // Long k-blocks with A read in place: C is loaded and stored once per tile, A's
      // rows stay in L1 across the N tiles and B streams from L2.
      schedule::MicroKernelSchedule deep = base;
      deep.kc = std::min<int64_t>(768, ext.k);
      deep.pack_a = schedule::PackA::Direct;
      deep.inner_tile_loop = Axis::N;
      deep.parallel = ParallelAxis::N;
      deep.nc = round_up((ext.n + threads - 1) / threads, nr);
      deep.mc = round_up(int64_t{96}, mr);
      variants.push_back(clamp_blocks(deep));
      deep.parallel = ParallelAxis::M;
      deep.nc = round_up(ext.n, nr);
      deep.mc = round_up(std::max<int64_t>(mr * 4, 64), mr);
      variants.push_back(clamp_blocks(deep));
    }
    // A short product of constant B reads B from memory: each variant also walking four
    // ranges of k at once (k_streams; tune::SearchSpace::kStreamingRows).
    if (c.b.constant && ext.m <= 16) {
      const size_t n = variants.size();
      for (size_t i = 0; i < n; ++i) {
        schedule::MicroKernelSchedule s = variants[i];
        s.k_streams = 4;
        variants.push_back(s);
      }
    }
    // B streamed from memory: each variant also prefetching B 64 k-steps ahead, and
    // those with m the inner tile loop also the next tile's B (prefetch_next).
    if (c.b.constant && cold_weights) {
      const size_t n = variants.size();
      for (size_t i = 0; i < n; ++i) {
        schedule::MicroKernelSchedule s = variants[i];
        s.prefetch_b = 64;
        variants.push_back(s);
        if (s.inner_tile_loop == Axis::M && s.pack_b == schedule::PackB::Prepacked &&
            s.vector_axis == Axis::N) {
          s.prefetch_next = true;
          variants.push_back(s);
        }
      }
    }
    // B in the cache (warm weights): the deep variants also reading B from tile-wide
    // panels, one contiguous stream per tile (schedule::BPanel), and at a few rows also
    // narrower, 4 and 6 vectors wide (2304 x 768 layer, side by side with oneDNN: 3 x 64 at
    // M = 2-3 1.00-1.08x, 3 x 128 0.82-1.01x; 5 x 80 at M = 4-5 1.00x on geomean, 0.90x in
    // vector panels; docs/bench/tuning-zen5/stop45/).
    if (c.b.constant && !cold_weights) {
      const size_t n = variants.size();
      for (size_t i = 0; i < n; ++i) {
        schedule::MicroKernelSchedule s = variants[i];
        if (s.pack_b != schedule::PackB::Prepacked || s.pack_a != schedule::PackA::Direct ||
            s.inner_tile_loop != Axis::N)
          continue;
        variants.push_back(schedule::in_tile_panels(s, s.nr));
        if (mr > kNarrowTilePanelRows || s.parallel != ParallelAxis::N) continue;
        for (int64_t vectors : {4, 6})
          if (vectors * vec.width < s.nr)
            variants.push_back(schedule::in_tile_panels(s, vectors * vec.width));
      }
    }
    for (const schedule::MicroKernelSchedule& s : variants) {
      try {
        schedule::bind(s, op, c);
      } catch (const Error&) {
        continue;
      }
      if (std::find(grid.begin(), grid.end(), s) == grid.end()) grid.push_back(s);
    }
  }
  // Tall one-vector tiles for M just past a short tile's multiple (17, 19, 23): with 32
  // vector registers a 15..24-row tile still keeps every accumulator in a register.
  for (int64_t mr = 15; mr <= std::min<int64_t>(24, schedule::max_tile_rows(1, vec.registers));
       ++mr) {
    if (mr > ext.m || batched) break;
    schedule::MicroKernelSchedule s;
    s.isa = isa;
    s.mr = mr;
    s.nr = vec.width;
    s.kc = std::min<int64_t>(768, ext.k);
    s.unroll_k = 4;
    s.loop_order = {Axis::N, Axis::K, Axis::M};
    s.inner_tile_loop = Axis::N;
    s.parallel = ParallelAxis::N;
    s.pack_b = c.b.constant ? schedule::PackB::Prepacked : schedule::PackB::PerBlock;
    s.nc = std::min(round_up((ext.n + threads - 1) / threads, s.nr), round_up(ext.n, s.nr));
    s.mc = std::min(round_up(int64_t{96}, mr), round_up(ext.m, mr));
    for (schedule::PackA pack : {schedule::PackA::Direct, schedule::PackA::Packed}) {
      s.pack_a = pack;
      try {
        schedule::bind(s, op, c);
        grid.push_back(s);
      } catch (const Error&) {
        // not valid for this operator's extents
      }
    }
  }
  if (grid.empty())
    user_error("operator {}: no micro-kernel of the sweep grid is valid for it", op.name);
  return grid;
}

std::vector<schedule::RowSchedule> row_sweep_grid(schedule::Isa isa, int threads) {
  std::vector<schedule::RowSchedule> grid;
  for (int64_t unroll : {1, 2, 4})
    for (int64_t rows : {1, 4, 16, 64})
      for (int64_t interleave : {1, 2, 4}) {
        if (interleave > rows) continue;
        schedule::RowSchedule s;
        s.isa = isa;
        s.unroll = unroll;
        s.rows_per_task = rows;
        s.parallel = threads > 1;
        s.passes = schedule::ReductionPasses::Fused;
        s.interleave = interleave;
        grid.push_back(s);
      }
  return grid;
}

std::vector<schedule::AttentionSchedule> attention_sweep_grid(schedule::Isa isa, int threads) {
  using schedule::AttentionParallel;
  std::vector<AttentionParallel> parallel{AttentionParallel::None};
  if (threads > 1) parallel = {AttentionParallel::Heads, AttentionParallel::HeadsAndQueryTiles};
  std::vector<schedule::AttentionSchedule> grid = schedule::attention_schedule_grid(
      isa, parallel, {1, 8, 16, 24, 32}, {8, 32, 64, 128}, {1, 2, 4, 8});
  // The head dimension in the lanes, for short sequences.
  for (const schedule::AttentionSchedule& s : schedule::attention_schedule_grid(
           isa, parallel, {4, 16}, {64, 128}, {1, 2}, schedule::AttentionLanes::HeadDim))
    grid.push_back(s);
  return grid;
}

}  // namespace dietcode::bench
