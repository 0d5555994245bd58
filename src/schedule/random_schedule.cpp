#include "schedule/random_schedule.h"

#include <algorithm>

#include "ops/contraction.h"
#include "support/error.h"

namespace dietcode::schedule {

namespace {

int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

}  // namespace

MicroKernelSchedule random_schedule(std::mt19937_64& rng, Isa isa_id, const te::Operator& op) {
  const VectorIsa& isa = vector_isa(isa_id);
  ops::Contraction c = ops::match_contraction(op);
  MaxExtents ext = max_extents(c, op);
  const bool b_direct = b_contiguous_along_n(c);
  const bool dot = operands_contiguous_along_k(c);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    MicroKernelSchedule s;
    s.isa = isa_id;
    // Up to 8 vectors: the widest tiles (1 x 64 on AVX2) load A first (tile_registers).
    int64_t max_vectors =
        std::max<int64_t>(1, std::min<int64_t>((ext.n + isa.width - 1) / isa.width, 8));
    int64_t vectors = uniform(rng, 1, max_vectors);
    s.nr = vectors * isa.width;
    int64_t max_mr = max_tile_rows(vectors, isa.registers);
    s.mr = uniform(rng, 1, std::max<int64_t>(1, std::min(max_mr, ext.m)));
    s.kc = uniform(rng, 1, std::min<int64_t>(ext.k, 512));
    int64_t m_tiles = (ext.m + s.mr - 1) / s.mr, n_tiles = (ext.n + s.nr - 1) / s.nr;
    s.mc = s.mr * uniform(rng, 1, std::min<int64_t>(m_tiles, 32));
    s.nc = s.nr * uniform(rng, 1, std::min<int64_t>(n_tiles, 32));
    s.loop_order = {Axis::N, Axis::K, Axis::M};
    std::shuffle(s.loop_order.begin(), s.loop_order.end(), rng);
    std::vector<ParallelAxis> par{ParallelAxis::None, ParallelAxis::M, ParallelAxis::N};
    if (!c.batch_axes.empty()) par.push_back(ParallelAxis::Batch);
    s.parallel = par[uniform(rng, 0, static_cast<int64_t>(par.size()) - 1)];
    s.unroll_k = std::vector<int64_t>{1, 2, 3, 4, 8}[uniform(rng, 0, 4)];
    s.k_streams = std::vector<int64_t>{1, 2, 4}[uniform(rng, 0,
                                                        s.unroll_k >= 4   ? 2
                                                        : s.unroll_k >= 2 ? 1
                                                                          : 0)];
    s.inner_tile_loop = uniform(rng, 0, 1) ? Axis::N : Axis::M;
    s.pack_a = uniform(rng, 0, 1) ? PackA::Packed : PackA::Direct;
    s.pack_b = (c.b.constant && uniform(rng, 0, 1)) ? PackB::Prepacked : PackB::PerBlock;
    if (s.pack_b == PackB::PerBlock && b_direct && uniform(rng, 0, 1)) s.pack_b = PackB::Direct;
    if (s.pack_b == PackB::Prepacked && uniform(rng, 0, 1)) s.b_panel = BPanel::Tile;
    // Dot products (A and B both along k) in a third of the draws where they apply: any
    // MR x NR that fits the registers, A and B in place.
    if (dot && uniform(rng, 0, 2) == 0) {
      s.vector_axis = Axis::K;
      s.nr = uniform(rng, 1, std::max<int64_t>(1, std::min<int64_t>(ext.n, 8)));
      s.mr = uniform(rng, 1,
                     std::max<int64_t>(1, std::min(max_tile_rows(s.nr, isa.registers), ext.m)));
      s.mc = s.mr * uniform(rng, 1, std::min<int64_t>((ext.m + s.mr - 1) / s.mr, 32));
      s.nc = s.nr * uniform(rng, 1, std::min<int64_t>((ext.n + s.nr - 1) / s.nr, 32));
      s.pack_a = PackA::Direct;
      s.pack_b = PackB::Direct;
      s.b_panel = BPanel::Vector;
      s.k_streams = 1;
    }
    // Heads innermost in a quarter of the draws of a batched product (bind() refuses it
    // where an operand is packed per block; the draw is then repeated).
    if (!c.batch_axes.empty() && uniform(rng, 0, 3) == 0) {
      s.batch_inner = true;
      s.pack_a = PackA::Direct;
      if (s.parallel == ParallelAxis::Batch) s.parallel = ParallelAxis::None;
    }
    // B prefetched ahead in a quarter of the outer-product draws.
    if (s.vector_axis == Axis::N && uniform(rng, 0, 3) == 0)
      s.prefetch_b = std::vector<int64_t>{16, 32, 64}[uniform(rng, 0, 2)];
    // The next tile's (block's) B prefetched in a third of the prepacked outer-product draws.
    if (s.vector_axis == Axis::N && s.pack_b == PackB::Prepacked && uniform(rng, 0, 2) == 0)
      s.prefetch_next = true;
    try {
      bind(s, op, c);
      return s;
    } catch (const Error&) {
      // e.g. direct A on a non-affine access, prepacked B shared across a batch: draw again
    }
  }
  user_error("operator {}: no valid {} micro-kernel found in 1000 random draws", op.name, isa.name);
}

}  // namespace dietcode::schedule
