// The sweep oracle's grid (benchmark/sweep.cpp): what it holds for a BERT dense layer.
#include "benchmark/sweep.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "ops/contraction.h"
#include "ops/dense.h"

namespace dietcode::bench {
namespace {

using schedule::BPanel;
using schedule::MicroKernelSchedule;

bool has(const std::vector<MicroKernelSchedule>& grid, int64_t mr, int64_t nr, BPanel panel) {
  return std::any_of(grid.begin(), grid.end(), [&](const MicroKernelSchedule& s) {
    return s.mr == mr && s.nr == nr && s.b_panel == panel;
  });
}

TEST(SweepGrid, WarmConstantBIsAlsoReadFromTilePanelsColdIsNot) {
  // Weights in cache: the deep variants (A in place, n the inner tile loop) also read B
  // from tile-wide panels, and at a few rows also 4 and 6 vectors wide (3 x 64 and 3 x 96
  // beside 3 x 128 on AVX-512). Weights from memory: vector panels only (no faster inside
  // a model, a packed copy per width). Every kernel binds to the operator.
  te::Operator op = ops::dense(1, 128, 2304, 768);
  for (int threads : {1, 2}) {
    std::vector<MicroKernelSchedule> warm =
        sweep_grid(op, schedule::Isa::Avx512, threads, /*cold_weights=*/false);
    std::vector<MicroKernelSchedule> cold =
        sweep_grid(op, schedule::Isa::Avx512, threads, /*cold_weights=*/true);
    for (const std::vector<MicroKernelSchedule>* grid : {&warm, &cold})
      for (const MicroKernelSchedule& s : *grid) EXPECT_NO_THROW(schedule::bind(s, op));
    EXPECT_TRUE(has(warm, 3, 128, BPanel::Vector));
    EXPECT_TRUE(has(warm, 3, 128, BPanel::Tile));
    EXPECT_TRUE(has(warm, 3, 64, BPanel::Tile));
    EXPECT_TRUE(has(warm, 3, 96, BPanel::Tile));
    EXPECT_TRUE(has(warm, 12, 32, BPanel::Tile));  // taller tiles: their own width only
    EXPECT_FALSE(has(warm, 12, 16, BPanel::Tile));
    for (const MicroKernelSchedule& s : warm) {
      if (s.b_panel != BPanel::Tile) continue;
      EXPECT_EQ(s.pack_a, schedule::PackA::Direct) << schedule::to_json_text(s);
      EXPECT_EQ(s.inner_tile_loop, schedule::Axis::N) << schedule::to_json_text(s);
    }
    EXPECT_TRUE(std::none_of(cold.begin(), cold.end(), [](const MicroKernelSchedule& s) {
      return s.b_panel == BPanel::Tile;
    }));
    for (const std::vector<MicroKernelSchedule>* grid : {&warm, &cold})
      for (size_t i = 0; i < grid->size(); ++i)
        for (size_t j = i + 1; j < grid->size(); ++j)
          EXPECT_FALSE((*grid)[i] == (*grid)[j]) << schedule::to_json_text((*grid)[i]);
  }
}

}  // namespace
}  // namespace dietcode::bench
