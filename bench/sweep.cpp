#include "bench/sweep.h"

#include <algorithm>

#include "ops/contraction.h"
#include "support/error.h"

namespace dietcode::bench {

namespace {

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Named, rather than assigned from literals in the loop: GCC 12 warns falsely
// (-Wrestrict, its bug 105329) on short literal assignments there.
const std::string kParallelBatch = "batch", kParallelM = "m", kParallelN = "n";

}  // namespace

std::vector<schedule::MicroKernelSchedule> sweep_grid(const te::Operator& op, const std::string& isa,
                                                      int threads) {
  ops::Contraction c = ops::match_contraction(op);
  schedule::MaxExtents ext = schedule::max_extents(c, op);
  const bool avx512 = isa == "avx512";
  // (mr, nr): from streaming shapes (one or two rows, wide) to square-ish compute tiles.
  std::vector<std::pair<int64_t, int64_t>> tiles =
      avx512 ? std::vector<std::pair<int64_t, int64_t>>{{1, 128}, {2, 96}, {4, 64}, {6, 64}, {8, 48}, {12, 32}, {14, 32}}
             : std::vector<std::pair<int64_t, int64_t>>{{1, 32}, {2, 32}, {3, 24}, {4, 24}, {6, 16}, {8, 8}};
  const bool batched = !c.batch_axes.empty();
  std::vector<schedule::MicroKernelSchedule> grid;
  for (auto [mr, nr] : tiles) {
    if (mr > ext.m) continue;
    nr = std::min(nr, round_up(ext.n, avx512 ? 16 : 8));
    schedule::MicroKernelSchedule base;
    base.isa = isa;
    base.mr = mr;
    base.nr = nr;
    base.kc = std::min<int64_t>(256, ext.k);
    base.unroll_k = 4;
    base.loop_order = {"n", "k", "m"};
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
      s.parallel = kParallelBatch;
      s.mc = round_up(128, mr);
      s.nc = round_up(512, nr);
      variants.push_back(clamp_blocks(s));
      s.pack_a = schedule::PackA::Direct;
      variants.push_back(clamp_blocks(s));
    } else {
      // Parallel over N blocks (small M: one M block) with two task counts per thread.
      for (int64_t tasks_per_thread : {1, 2}) {
        schedule::MicroKernelSchedule s = base;
        s.parallel = kParallelN;
        s.nc = round_up((ext.n + threads * tasks_per_thread - 1) / (threads * tasks_per_thread), nr);
        s.mc = round_up(96, mr);
        s.pack_a = mr <= 2 ? schedule::PackA::Direct : schedule::PackA::Packed;
        variants.push_back(clamp_blocks(s));
      }
      // Parallel over M blocks (large M).
      schedule::MicroKernelSchedule s = base;
      s.parallel = kParallelM;
      s.mc = round_up(std::max<int64_t>(mr * 4, 64), mr);
      s.nc = round_up(1024, nr);
      variants.push_back(clamp_blocks(s));
    }
    for (const schedule::MicroKernelSchedule& s : variants) {
      try {
        schedule::validate(s, op);
      } catch (const Error&) {
        continue;
      }
      if (std::find(grid.begin(), grid.end(), s) == grid.end()) grid.push_back(s);
    }
  }
  if (grid.empty()) user_error("operator {}: no micro-kernel of the sweep grid is valid for it", op.name);
  return grid;
}

}  // namespace dietcode::bench
