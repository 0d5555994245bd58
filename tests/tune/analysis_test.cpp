// The analytical half of the cost model, and the features' shape.
#include "tune/analysis.h"

#include <gtest/gtest.h>

#include "ops/batch_matmul.h"
#include "ops/dense.h"
#include "test_support.h"
#include "tune/cost_model.h"

namespace dietcode::tune {
namespace {

using testing::make_schedule;

TEST(PadRatio, CountsPaddedTileWork) {
  auto s = make_schedule(schedule::Isa::Avx512, 4, 32, 64, 8, 64);
  EXPECT_DOUBLE_EQ(pad_ratio(s, {1, 8, 64, 16}), 1.0);
  // M = 5 on 4-row tiles: a whole tile and a 1-row sub-tile (1 + kSubTileRows rows of
  // work); N = 40 on 32 wide: 64 columns for 40.
  EXPECT_DOUBLE_EQ(pad_ratio(s, {1, 5, 40, 16}), (5.0 * 40.0) / ((5.0 + kSubTileRows) * 64.0));
}

TEST(PadRatio, EdgeRowsCostTheirSubTiles) {
  auto s = make_schedule(schedule::Isa::Avx2, 6, 16, 96, 12, 64);
  EXPECT_DOUBLE_EQ(tile_rows_done(s, 12), 12.0);
  EXPECT_DOUBLE_EQ(tile_rows_done(s, 13), 13.0 + kSubTileRows);      // 12 + 1
  EXPECT_DOUBLE_EQ(tile_rows_done(s, 17), 17.0 + 2 * kSubTileRows);  // 12 + 4 + 1
  EXPECT_DOUBLE_EQ(tile_rows_done(s, 3), 3.0 + 2 * kSubTileRows);    // 2 + 1
  // Never more than a whole tile: 14 rows of 15-row tiles are 8 + 4 + 2 rows, and three
  // sub-tiles' overhead would pass 15.
  s.mr = 15;
  EXPECT_DOUBLE_EQ(tile_rows_done(s, 14), 15.0);
  // Dot-product tiles compute whole tiles at the edge.
  s.mr = 4;
  s.vector_axis = schedule::Axis::K;
  EXPECT_DOUBLE_EQ(tile_rows_done(s, 5), 8.0);
}

// The edge rows are remembered per tile: asked again, and for tiles that differ only in
// width, ISA or k block (which change the passes' plan), each answer is still the plan's.
TEST(PadRatio, RememberedEdgeRowsAreEachTilesOwn) {
  auto planned = [](const schedule::MicroKernelSchedule& s, int64_t m) {
    const int64_t w = schedule::vector_isa(s.isa).width, edge = m % s.mr;
    if (edge == 0) return double(m);
    double rows = 0;
    for (const schedule::EdgePass& p : schedule::edge_passes(s.mr, s.nr / w, 4 * w, s.kc, edge))
      rows += double(p.rows) + kSubTileRows;  // each pass its rows of C
    return double(m - edge) + std::min(rows, double(s.mr));
  };
  for (int pass = 0; pass < 2; ++pass)
    for (schedule::Isa isa : {schedule::Isa::Avx2, schedule::Isa::Avx512})
      for (int64_t mr : {3, 7, 12, 15})
        for (int64_t vectors : {1, 2, 4})
          for (int64_t kc : {64, 4096}) {
            const int64_t w = schedule::vector_isa(isa).width;
            auto s = make_schedule(isa, mr, vectors * w, kc, mr, vectors * w);
            for (int64_t m = 1; m <= 2 * mr + 1; ++m)
              EXPECT_DOUBLE_EQ(tile_rows_done(s, m), planned(s, m))
                  << "mr " << mr << " vectors " << vectors << " kc " << kc << " m " << m;
          }
}

TEST(PadRatio, CountsBothAxesWhenOneVariableDrivesThem) {
  // Attention's Q K^T: M = N = T. At T = 17, 4-row tiles compute 16 rows and a 1-row
  // sub-tile, and 8-wide tiles 24 columns: both paddings count.
  te::ShapeVar t = te::shape_var("T", 1, 128);
  te::Operator op = ops::batch_matmul({t}, 12, t.var, t.var, 64, ops::Layout::NT);
  Extents e = ShapeExtents::at(ops::match_contraction(op), op, {17});
  EXPECT_EQ(e.m, 17);
  EXPECT_EQ(e.n, 17);
  EXPECT_EQ(e.batch, 12);
  auto s = make_schedule(schedule::Isa::Avx2, 4, 8, 64, 8, 64);
  EXPECT_DOUBLE_EQ(pad_ratio(s, e), (17.0 * 17.0) / ((17.0 + kSubTileRows) * 24.0));
}

TEST(ParallelTasks, FollowTheParallelAxis) {
  auto s = make_schedule(schedule::Isa::Avx512, 4, 32, 64, 8, 64);
  Extents e{3, 20, 200, 16};
  s.parallel = schedule::ParallelAxis::M;
  EXPECT_EQ(parallel_tasks(s, e), 3);  // ceil(20 / 8)
  s.parallel = schedule::ParallelAxis::N;
  EXPECT_EQ(parallel_tasks(s, e), 4);  // ceil(200 / 64)
  s.parallel = schedule::ParallelAxis::Batch;
  EXPECT_EQ(parallel_tasks(s, e), 3);
  s.parallel = schedule::ParallelAxis::None;
  EXPECT_EQ(parallel_tasks(s, e), 1);
}

TEST(Occupancy, IdealMachineAndFittedExponent) {
  OccupancyModel occ{4, 1.0};
  EXPECT_DOUBLE_EQ(occ.occ(4), 1.0);
  EXPECT_DOUBLE_EQ(occ.occ(5), 5.0 / 8.0);
  EXPECT_DOUBLE_EQ(occ.occ(1), 0.25);
  EXPECT_DOUBLE_EQ((OccupancyModel{1, 1.0}.occ(3)), 1.0);  // one core: always full
  // Synthetic measurements made by a machine whose occupancy is ideal^0.5: the fit
  // recovers the exponent.
  std::vector<OccupancyModel::Sample> samples;
  for (int g = 0; g < 5; ++g)
    for (int64_t tasks : {1, 2, 3, 4, 5, 6, 7}) {
      double base = 50.0 + 10 * g;
      samples.push_back({g, tasks, base * std::pow(occ.occ(tasks), 0.5)});
    }
  occ.fit(samples);
  EXPECT_NEAR(occ.alpha, 0.5, 0.03);
}

TEST(Occupancy, NoInformationKeepsTheIdealExponent) {
  // Kernels measured only at task counts that fill the cores (4 and 8 tasks on 2 cores)
  // say nothing about occupancy: the exponent stays 1.
  OccupancyModel occ{2, 1.0};
  std::vector<OccupancyModel::Sample> samples;
  for (int g = 0; g < 4; ++g)
    for (int64_t tasks : {4, 8}) samples.push_back({g, tasks, 100.0 + g + double(tasks)});
  occ.fit(samples);
  EXPECT_DOUBLE_EQ(occ.alpha, 1.0);
}

TEST(BestFitShape, TiesGoToTheLargerShape) {
  te::Operator op = ops::dense(1, 64, 128, 64);
  ShapeExtents shapes(op, {{3}, {6}, {12}, {13}, {5}});
  auto s = make_schedule(schedule::Isa::Avx512, 3, 16, 64, 6, 32);
  OccupancyModel occ{1, 1.0};
  // pad is 1 for M = 3, 6, 12: the largest, 12 (index 2), wins.
  EXPECT_EQ(best_fit_shape(s, shapes, occ), 2u);
}

TEST(Features, OneValuePerNameAndFinite) {
  auto s = make_schedule(schedule::Isa::Avx2, 6, 16, 256, 48, 128);
  std::vector<float> f = micro_kernel_features(s, {1, 100, 768, 768}, 2);
  ASSERT_EQ(f.size(), feature_names().size());
  for (float v : f) EXPECT_TRUE(std::isfinite(v));
}

TEST(ThroughputModel, ConstantUntilEnoughSamples) {
  ThroughputModel m;
  std::vector<std::vector<float>> x(10, std::vector<float>(feature_names().size(), 1.f));
  std::vector<double> y(10, 42.0);
  m.train(x, y);
  EXPECT_FALSE(m.trained());
  for (double p : m.predict(x)) EXPECT_DOUBLE_EQ(p, 42.0);
}

TEST(RankingAccuracy, CountsAgreeingPairs) {
  EXPECT_DOUBLE_EQ(pairwise_ranking_accuracy({1, 2, 3}, {10, 20, 30}), 1.0);
  EXPECT_DOUBLE_EQ(pairwise_ranking_accuracy({3, 2, 1}, {10, 20, 30}), 0.0);
  EXPECT_NEAR(pairwise_ranking_accuracy({1, 3, 2}, {10, 20, 30}), 2.0 / 3.0, 1e-12);
  // 100 vs 101 is within a 5% gap: that misordered pair is not counted.
  EXPECT_DOUBLE_EQ(pairwise_ranking_accuracy({2, 1, 3}, {100, 101, 200}, 0.05), 1.0);
  EXPECT_NEAR(pairwise_ranking_accuracy({2, 1, 3}, {100, 101, 200}), 2.0 / 3.0, 1e-12);
}

}  // namespace
}  // namespace dietcode::tune
