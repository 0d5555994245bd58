// Decisions made side by side and a search that starts where the good kernels are:
// the finalist plan and the scores selection decides from; the sketch-rule seeds; the
// tuner end to end with finals appended, resumed without re-measuring, at 1 and 2
// threads.
#include "tune/finalists.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "codegen/llvm/target.h"
#include "ops/batch_matmul.h"
#include "ops/dense.h"
#include "reference/reference.h"
#include "runtime/module.h"
#include "support/cpu_caches.h"
#include "support/int_math.h"
#include "test_support.h"
#include "tune/analysis.h"
#include "tune/search_space.h"
#include "tune/tuner.h"
#include "tune_support.h"

namespace dietcode::tune {
namespace {

namespace fs = std::filesystem;

schedule::MicroKernelSchedule kernel(int64_t mr) {
  return testing::make_schedule(schedule::Isa::Avx2, mr, 16, 64, mr * 4, 64);
}

std::vector<std::vector<int64_t>> range(int64_t lo, int64_t hi) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t m = lo; m <= hi; ++m) out.push_back({m});
  return out;
}

TEST(Finalists, ChallengersAreLeftOutKernelsMeasuredWellAheadOnAShape) {
  std::vector<std::vector<int64_t>> shapes = range(1, 6);
  FinalScores finals;
  finals.kernels = {kernel(1), kernel(2), kernel(3), kernel(4), kernel(5)};
  // Selected: kernels 0 and 1. On the finals shapes M = 1, 2, 3, 5 the best left-out kernel
  // is ahead of the best selected one by 50% (kernel 2 at M = 1), 2% (kernel 3 at M = 2:
  // too little), 20% (kernel 4 at M = 3) and 30% (kernel 2 again at M = 5). M = 4 has no
  // window: kernel 3's lead there is not a measurement side by side.
  finals.score = {{10, 8, 15, 1, 1}, {10, 1, 1, 10.2, 1}, {1, 10, 1, 1, 12},
                  {1, 1, 1, 50, 1},  {10, 1, 13, 1, 1},   {1, 1, 1, 1, 1}};
  std::vector<FinalistWindow> windows;
  for (int64_t m : {1, 2, 3, 5}) windows.push_back({{m}, finals.kernels});
  std::vector<schedule::AnySchedule> selected = {finals.kernels[0], finals.kernels[1]};
  std::vector<schedule::AnySchedule> c =
      crosscheck_challengers(shapes, windows, finals, selected, 3);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0], finals.kernels[2]);  // its largest lead, 50%, first
  EXPECT_EQ(c[1], finals.kernels[4]);
  EXPECT_EQ(crosscheck_challengers(shapes, windows, finals, selected, 1).size(), 1u);
  // Nothing to challenge once the selection holds every shape's best.
  selected = finals.kernels;
  EXPECT_TRUE(crosscheck_challengers(shapes, windows, finals, selected, 3).empty());
}

TEST(Finalists, TheFirstChallengersMeetTheSelectionEverywhereTheOthersWhereTheFinalsMetThem) {
  const std::vector<schedule::AnySchedule> ks = {kernel(1), kernel(2), kernel(3),
                                                 kernel(4), kernel(5), kernel(6)};
  // The finals: kernel 3 was in the windows of M = 2 and 8, kernel 4 in M = 8's, kernel 5
  // in M = 32's; kernels 0 and 1 are the first selection.
  const std::vector<FinalistWindow> finals = {
      {{2}, {ks[0], ks[3]}}, {{8}, {ks[1], ks[3], ks[4]}}, {{32}, {ks[0], ks[1], ks[5]}}};
  const std::vector<schedule::AnySchedule> selected = {ks[0], ks[1]};
  // Largest gain first: kernel 5 goes everywhere, kernels 3 and 4 where they were finals.
  const std::vector<schedule::AnySchedule> challengers = {ks[5], ks[3], ks[4]};
  const std::vector<FinalistWindow> cross = plan_crosscheck(finals, selected, challengers, 1);
  ASSERT_EQ(cross.size(), finals.size());
  const std::vector<std::vector<schedule::AnySchedule>> want = {
      {ks[0], ks[1], ks[5], ks[3]}, {ks[0], ks[1], ks[5], ks[3], ks[4]}, {ks[0], ks[1], ks[5]}};
  for (size_t w = 0; w < cross.size(); ++w) {
    EXPECT_EQ(cross[w].shape, finals[w].shape);
    EXPECT_EQ(cross[w].kernels, want[w]) << "window M = " << finals[w].shape[0];
  }
  // Every challenger everywhere, as before the local ones.
  for (const FinalistWindow& w : plan_crosscheck(finals, selected, challengers, 3))
    EXPECT_EQ(w.kernels.size(), 5u);
  // No challenger: the selection alone on every shape.
  for (const FinalistWindow& w : plan_crosscheck(finals, selected, {}, 3))
    EXPECT_EQ(w.kernels, selected);
}

TEST(Finalists, EachSampledShapeMeetsItsBestAndItsNeighboursBest) {
  std::vector<std::vector<int64_t>> shapes = range(1, 9);
  std::vector<schedule::AnySchedule> ks = {kernel(1), kernel(2), kernel(3), kernel(4), kernel(5)};
  // Kernel k is best on shapes 2k..2k+1 (k = 0..4), second best is k+1.
  std::vector<std::vector<double>> score(shapes.size(), std::vector<double>(ks.size(), 1.0));
  for (size_t s = 0; s < shapes.size(); ++s) {
    size_t k = std::min<size_t>(s / 2, 4);
    score[s][k] = 10;
    score[s][(k + 1) % 5] = 5;
  }
  FinalistParams p;
  p.shapes = 3;  // M = 1, 3 (geometric), 9
  p.dense = 0;
  p.per_shape = 2;
  p.max_per_window = 4;
  std::vector<FinalistWindow> w = plan_finalists(shapes, ks, score, p);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].shape, std::vector<int64_t>{1});
  EXPECT_EQ(w[1].shape, std::vector<int64_t>{3});
  EXPECT_EQ(w[2].shape, std::vector<int64_t>{9});
  // M=3: its best (kernel 1) and second (2), M=1's best (0), M=9's best (4).
  ASSERT_EQ(w[1].kernels.size(), 4u);
  EXPECT_EQ(w[1].kernels[0], ks[1]);
  EXPECT_EQ(w[1].kernels[1], ks[2]);
  EXPECT_EQ(w[1].kernels[2], ks[0]);
  EXPECT_EQ(w[1].kernels[3], ks[4]);
  for (const FinalistWindow& one : w) EXPECT_LE(one.kernels.size(), 4u);
  // Kernel 3 wins only on M = 7, 8, which no window samples.
  EXPECT_EQ(finalists_of(w).size(), 4u);
}

TEST(Finalists, TheKernelMeasuredFastestAtAShapeJoinsItsWindow) {
  // The model predicts kernels 1-3 above kernel 0 on every shape; kernel 0 was measured
  // fastest at M = 3 (and nowhere else). It joins M = 3's window, first, and no other.
  std::vector<std::vector<int64_t>> shapes = range(1, 9);
  std::vector<schedule::AnySchedule> ks = {kernel(1), kernel(2), kernel(3), kernel(4)};
  std::vector<std::vector<double>> score(shapes.size(), {5.0, 10.0, 9.0, 8.0});
  FinalistParams p;
  p.shapes = 3;  // M = 1, 3, 9
  p.dense = 0;
  p.per_shape = 3;
  p.max_per_window = 4;
  std::vector<TuningRecord> records(3);
  records[0].schedule = ks[0];
  records[0].shape = {3};
  records[0].gflops = 56;
  records[0].origin = Origin::Joint;
  records[1].schedule = ks[1];
  records[1].shape = {3};
  records[1].gflops = 30;
  records[1].origin = Origin::Joint;
  records[2].schedule = ks[2];  // a final is not the search's measurement
  records[2].shape = {9};
  records[2].gflops = 99;
  records[2].origin = Origin::Final;
  std::vector<int> best = measured_best(shapes, ks, records);
  EXPECT_EQ(best[2], 0);
  EXPECT_EQ(best[0], -1);
  EXPECT_EQ(best[8], -1);
  std::vector<FinalistWindow> w = plan_finalists(shapes, ks, score, p, best);
  ASSERT_EQ(w.size(), 3u);
  ASSERT_EQ(w[1].shape, std::vector<int64_t>{3});
  ASSERT_FALSE(w[1].kernels.empty());
  EXPECT_EQ(w[1].kernels[0], ks[0]);
  for (size_t j : {size_t{0}, size_t{2}})
    for (const schedule::AnySchedule& k : w[j].kernels) EXPECT_NE(k, ks[0]);
  // Without the measurements, the model's three favourites fill M = 3's window.
  std::vector<FinalistWindow> by_model = plan_finalists(shapes, ks, score, p);
  for (const schedule::AnySchedule& k : by_model[1].kernels) EXPECT_NE(k, ks[0]);
}

TEST(Finalists, SamplesSmallShapesDenselyAndLargeOnesEvenly) {
  // The main job's 128 sequence lengths with the defaults: every one of 1..16, geometric
  // 1, 2, 3, 4, 5, 6, 7, 10, 13, 18, 25, 35, 49, 67, 93, 128 (each past the last) and
  // evenly 1, 43, 86, 128.
  std::vector<std::vector<int64_t>> shapes = range(1, 128);
  std::vector<schedule::AnySchedule> ks = {kernel(1)};
  std::vector<std::vector<double>> score(shapes.size(), std::vector<double>(1, 1.0));
  std::vector<FinalistWindow> w = plan_finalists(shapes, ks, score, FinalistParams{});
  std::vector<int64_t> sampled;
  for (const FinalistWindow& one : w) sampled.push_back(one.shape[0]);
  EXPECT_EQ(sampled, (std::vector<int64_t>{1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13,
                                           14, 15, 16, 18, 25, 35, 43, 49, 67, 86, 93, 128}));
  // Without the dense share: the geometric and even ones only.
  FinalistParams sparse;
  sparse.dense = 0;
  w = plan_finalists(shapes, ks, score, sparse);
  sampled.clear();
  for (const FinalistWindow& one : w) sampled.push_back(one.shape[0]);
  EXPECT_EQ(sampled, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 10, 13, 18, 25, 35, 43, 49, 67, 86,
                                           93, 128}));
  // Fewer declared shapes than asked: every one.
  w = plan_finalists(range(1, 5), ks, std::vector<std::vector<double>>(5, {1.0}), FinalistParams{});
  EXPECT_EQ(w.size(), 5u);
}

// A side-by-side measurement of kernel `k` on shape {m} at `gflops`.
TuningRecord final_record(const schedule::AnySchedule& k, int64_t m, double gflops) {
  TuningRecord r;
  r.schedule = k;
  r.shape = {m};
  r.origin = Origin::Final;
  r.seconds = 1;
  r.gflops = gflops;
  return r;
}

TEST(Finalists, ScoresArePairedNumbersAndScaledPredictionsBetween) {
  std::vector<std::vector<int64_t>> shapes = range(1, 5);
  std::vector<schedule::AnySchedule> ks = {kernel(1), kernel(2)};
  std::vector<std::vector<double>> predicted = {{10, 10, 10, 10, 10}, {20, 20, 20, 20, 20}};
  std::vector<TuningRecord> records;
  auto final = [&](size_t k, int64_t m, double g) { records.push_back(final_record(ks[k], m, g)); };
  final(0, 1, 20);  // twice its prediction at M=1
  final(0, 5, 40);  // four times at M=5
  final(1, 1, 30);  // an older window, replaced by the next line
  final(1, 1, 10);
  TuningRecord joint = records[0];
  joint.origin = Origin::Joint;
  joint.gflops = 1000;  // not a final: ignored
  records.push_back(joint);
  FinalScores f = final_scores_from(shapes, ks, predicted, records);
  EXPECT_EQ(f.measured, 3);
  EXPECT_DOUBLE_EQ(f.score[0][0], 20);
  EXPECT_DOUBLE_EQ(f.score[4][0], 40);
  EXPECT_NEAR(f.score[2][0], 10 * std::exp(0.5 * (std::log(2.0) + std::log(4.0))), 1e-9);
  EXPECT_DOUBLE_EQ(f.score[0][1], 10);
  EXPECT_DOUBLE_EQ(f.score[3][1], 10);  // half its prediction, carried from M=1
}

TEST(Finalists, ALeadOverADisturbedFigureIsSettledInTheCrosscheck) {
  // Kernel 0 selected. At M = 1 and M = 2 kernel 1 leads it by 3% (less than
  // kChallengerGain); at M = 1 kernel 0's paired figure was disturbed (a 250-trial run of
  // BERT's 768 x 768 layer: a kernel measured at 129 GFLOP/s with its bursts 25% apart kept
  // a 134 GFLOP/s tile out of the crosscheck at M = 8, and served it at 0.80-0.97 of the
  // sweep). At M = 3 kernel 2's own figure was disturbed but trails: no challenge.
  std::vector<std::vector<int64_t>> shapes = range(1, 3);
  std::vector<schedule::AnySchedule> ks = {kernel(1), kernel(2), kernel(3)};
  std::vector<std::vector<double>> predicted(3, std::vector<double>(3, 10));
  std::vector<TuningRecord> records;
  auto final = [&](size_t k, int64_t m, double g, bool disturbed) {
    records.push_back(final_record(ks[k], m, g));
    records.back().timing = TimingSpread{};
    records.back().timing->disturbed = disturbed;
  };
  final(0, 1, 100, true);
  final(1, 1, 103, false);
  final(0, 2, 100, false);
  final(1, 2, 103, false);
  final(0, 3, 100, false);
  final(2, 3, 99, true);
  FinalScores f = final_scores_from(shapes, ks, predicted, records);
  EXPECT_TRUE(f.disturbed_at(0, 0));
  EXPECT_FALSE(f.disturbed_at(0, 1));
  EXPECT_TRUE(f.disturbed_at(2, 2));
  std::vector<FinalistWindow> windows;
  for (int64_t m : {1, 2}) windows.push_back({{m}, {ks[0], ks[1]}});
  windows.push_back({{3}, {ks[0], ks[2]}});
  const std::vector<schedule::AnySchedule> selected = {ks[0]};
  std::vector<schedule::AnySchedule> c = crosscheck_challengers(shapes, windows, f, selected, 3);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0], ks[1]);
  // The same leads measured clean: too small to challenge.
  for (TuningRecord& r : records) r.timing->disturbed = false;
  f = final_scores_from(shapes, ks, predicted, records);
  EXPECT_TRUE(f.disturbed.empty());
  EXPECT_TRUE(crosscheck_challengers(shapes, windows, f, selected, 3).empty());
}

TEST(Finalists, AKernelNotInAShapesWindowDoesNotOutbidItsPairedNumbers) {
  // Kernel 1 measured at its prediction at M=1 only; at M=4 (a window of kernel 0 alone)
  // its carried-over score (100) would beat the measured 30: it is capped at 30, the
  // window's slowest. At M=2 (no window) the carried score stands.
  std::vector<std::vector<int64_t>> shapes = range(1, 4);
  std::vector<schedule::AnySchedule> ks = {kernel(1), kernel(2)};
  std::vector<std::vector<double>> predicted = {{10, 10, 10, 10}, {100, 100, 100, 100}};
  std::vector<TuningRecord> records;
  auto final = [&](size_t k, int64_t m, double g) { records.push_back(final_record(ks[k], m, g)); };
  final(0, 1, 10);
  final(1, 1, 100);
  final(0, 4, 30);
  FinalScores f = final_scores_from(shapes, ks, predicted, records);
  EXPECT_DOUBLE_EQ(f.score[3][0], 30);
  EXPECT_DOUBLE_EQ(f.score[3][1], 30);
  EXPECT_DOUBLE_EQ(f.score[1][1], 100);
  EXPECT_DOUBLE_EQ(f.score[0][1], 100);
}

TEST(Finalists, TheDispatchCheckPairsTheBestSelectedKernelsOnEveryUnsampledShape) {
  // Shapes 1..6, 1 and 4 sampled by the finals. Four selected kernels with scores per shape.
  std::vector<std::vector<int64_t>> shapes = range(1, 6);
  std::vector<schedule::AnySchedule> ks = {kernel(1), kernel(2), kernel(3), kernel(4)};
  std::vector<std::vector<double>> score = {
      {100, 90, 80, 70},  // M=1: sampled, no window
      {100, 90, 80, 70},  // M=2: the best three
      {50, 100, 74, 76},  // M=3: 1 and 3 (76 is within 25% of 100; 74 is not)
      {100, 90, 80, 70},  // M=4: sampled
      {100, 10, 20, 30},  // M=5: none within 25% of the best: no window
      {0, 0, 0, 0},       // M=6: nothing scores: no window
  };
  std::vector<FinalistWindow> w = plan_dispatch_check(shapes, ks, score, {{1}, {4}}, 3);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].shape, std::vector<int64_t>{2});
  EXPECT_EQ(w[0].kernels, (std::vector<schedule::AnySchedule>{ks[0], ks[1], ks[2]}));
  EXPECT_EQ(w[1].shape, std::vector<int64_t>{3});
  EXPECT_EQ(w[1].kernels, (std::vector<schedule::AnySchedule>{ks[1], ks[3]}));
  // Two per shape; none with fewer than two allowed, or with one kernel selected.
  w = plan_dispatch_check(shapes, ks, score, {{1}, {4}}, 2);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].kernels, (std::vector<schedule::AnySchedule>{ks[0], ks[1]}));
  EXPECT_TRUE(plan_dispatch_check(shapes, ks, score, {{1}, {4}}, 1).empty());
  EXPECT_TRUE(plan_dispatch_check(shapes, {ks[0]}, score, {{1}, {4}}, 3).empty());
}

TEST(Finalists, TheDispatchCheckPairsAShapesChallengerWithTheSelectedKernels) {
  std::vector<std::vector<int64_t>> shapes = range(1, 4);
  std::vector<schedule::AnySchedule> ks = {kernel(1), kernel(2)};
  const schedule::AnySchedule c = kernel(3);
  std::vector<std::vector<double>> score = {
      {100, 90},  // M=1: sampled
      {100, 90},  // M=2: both, and the challenger
      {100, 10},  // M=3: one within the margin, and the challenger: a window of two
      {100, 90},  // M=4: no challenger
  };
  std::vector<std::optional<schedule::AnySchedule>> challengers = {c, c, c, std::nullopt};
  std::vector<FinalistWindow> w = plan_dispatch_check(shapes, ks, score, {{1}}, 2, challengers);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].kernels, (std::vector<schedule::AnySchedule>{ks[0], ks[1], c}));
  EXPECT_EQ(w[1].kernels, (std::vector<schedule::AnySchedule>{ks[0], c}));
  EXPECT_EQ(w[2].kernels, (std::vector<schedule::AnySchedule>{ks[0], ks[1]}));
  // Without challengers M = 3 has one kernel to pair: no window.
  EXPECT_EQ(plan_dispatch_check(shapes, ks, score, {{1}}, 2).size(), 2u);
}

TEST(Finalists, ADispatchChallengerIsTheSearchsFastestUnselectedKernelWellAhead) {
  std::vector<std::vector<int64_t>> shapes = range(1, 5);
  std::vector<schedule::AnySchedule> ks = {kernel(1), kernel(2), kernel(3), kernel(4)};
  std::vector<schedule::AnySchedule> selected = {ks[0], ks[1]};
  // The selected kernels' scores: 100 at best on every shape.
  std::vector<std::vector<double>> score(shapes.size(), {100.0, 80.0});
  std::vector<TuningRecord> records;
  auto measured = [&](size_t k, int64_t m, double gflops, Origin origin = Origin::Joint) {
    TuningRecord r;
    r.schedule = ks[k];
    r.shape = {m};
    r.seconds = 1;
    r.gflops = gflops;
    r.origin = origin;
    records.push_back(r);
  };
  measured(2, 1, 110);  // M=1: 10% ahead: the challenger
  measured(3, 1, 104);
  measured(2, 2, 103);  // M=2: 3% ahead: too little
  measured(3, 3, 120);  // M=3: ahead, but a selected kernel measured faster there: that one
  measured(1, 3, 130);
  measured(3, 4, 150, Origin::DispatchCheck);  // M=4: not the search's measurement
  // M=5: nothing measured.
  std::vector<std::optional<schedule::AnySchedule>> c =
      dispatch_challengers(shapes, ks, records, selected, score);
  ASSERT_EQ(c.size(), shapes.size());
  ASSERT_TRUE(c[0].has_value());
  EXPECT_EQ(*c[0], ks[2]);
  ASSERT_TRUE(c[2].has_value());
  EXPECT_EQ(*c[2], ks[1]);
  for (size_t s : {1, 3, 4}) EXPECT_FALSE(c[s].has_value()) << "M=" << s + 1;
}

TEST(Finalists, TheSelectedKernelWithTheSearchsFastestLoopsOnAShapeIsPaired) {
  // The case of the two-thread 2304 x 768 layer at M = 23: the search's fastest there is a
  // 12 x 32 tile with mc = 132, the module's 12 x 32 kernel has mc = 108 (the same loops at
  // M = 23, one m block either way); the selected kernels' scores rank two others first.
  auto tile = [](int64_t mr, int64_t mc) {
    schedule::MicroKernelSchedule k =
        testing::make_schedule(schedule::Isa::Avx512, mr, 32, 768, mc, 160);
    k.parallel = schedule::ParallelAxis::N;
    return k;
  };
  const std::vector<std::vector<int64_t>> shapes = {{22}, {23}, {200}};
  const std::vector<schedule::AnySchedule> selected = {tile(13, 130), tile(11, 121), tile(12, 108)};
  const schedule::AnySchedule probe = tile(12, 132);
  std::vector<schedule::AnySchedule> candidates = selected;
  candidates.push_back(probe);
  // Scores: 13 x 32 and 11 x 32 ahead of 12 x 32 by the model's guess, and ahead of the
  // probe's measurement by less than kChallengerGain.
  const std::vector<std::vector<double>> score(shapes.size(), {400.0, 398.0, 380.0});
  std::vector<TuningRecord> records;
  for (int64_t m : {23, 200}) {
    TuningRecord r;
    r.schedule = probe;
    r.shape = {m};
    r.seconds = 1;
    r.gflops = 417;
    r.origin = Origin::Probe;
    records.push_back(r);
  }
  const std::vector<Extents> extents = {
      {1, 22, 2304, 768}, {1, 23, 2304, 768}, {1, 200, 2304, 768}};
  const SameAt same_at = [&](size_t s, const schedule::AnySchedule& a,
                             const schedule::AnySchedule& b) {
    return same_loops_at(std::get<schedule::MicroKernelSchedule>(a),
                         std::get<schedule::MicroKernelSchedule>(b), extents[s]);
  };
  std::vector<std::optional<schedule::AnySchedule>> c =
      dispatch_challengers(shapes, candidates, records, selected, score, same_at);
  EXPECT_FALSE(c[0].has_value());  // nothing measured at M = 22
  ASSERT_TRUE(c[1].has_value());
  EXPECT_EQ(*c[1], selected[2]);  // the selected kernel, not the probe
  // At M = 200 the two run different m blocks (108 against 132 rows): the probe is not the
  // selected kernel there, and 417 is not 5% above the best score (400): no challenger.
  EXPECT_FALSE(c[2].has_value());
  // Without `same_at` the probe is a kernel of its own everywhere.
  EXPECT_FALSE(dispatch_challengers(shapes, candidates, records, selected, score)[1].has_value());
  // The window at M = 23 pairs it with the two ranked best.
  std::vector<FinalistWindow> w = plan_dispatch_check(shapes, selected, score, {}, 2, c);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[1].shape, std::vector<int64_t>{23});
  EXPECT_EQ(w[1].kernels,
            (std::vector<schedule::AnySchedule>{selected[0], selected[1], selected[2]}));
  // A challenger already among the window's kernels is not timed twice.
  c[0] = selected[0];
  w = plan_dispatch_check(shapes, selected, score, {}, 2, c);
  EXPECT_EQ(w[0].kernels, (std::vector<schedule::AnySchedule>{selected[0], selected[1]}));
}

TEST(Finalists, SameLoopsAtAShapeIgnoreTheSizeOfABlockThatSpansItsExtent) {
  schedule::MicroKernelSchedule a =
      testing::make_schedule(schedule::Isa::Avx512, 12, 32, 768, 108, 160);
  schedule::MicroKernelSchedule b = a;
  b.mc = 132;
  EXPECT_TRUE(same_loops_at(a, b, {1, 23, 2304, 768}));
  EXPECT_TRUE(same_loops_at(a, b, {1, 108, 2304, 768}));
  EXPECT_FALSE(same_loops_at(a, b, {1, 109, 2304, 768}));  // two m blocks against one
  b = a;
  b.kc = 1024;  // both span K = 768
  EXPECT_TRUE(same_loops_at(a, b, {1, 23, 2304, 768}));
  EXPECT_FALSE(same_loops_at(a, b, {1, 23, 2304, 1000}));
  b = a;
  b.nc = 320;  // 160 does not span N
  EXPECT_FALSE(same_loops_at(a, b, {1, 23, 2304, 768}));
  EXPECT_TRUE(same_loops_at(a, b, {1, 23, 160, 768}));
  b = a;
  b.mr = 11;  // any other field: different loops
  EXPECT_FALSE(same_loops_at(a, b, {1, 1, 1, 1}));
  b = a;
  b.prefetch_next = true;
  EXPECT_FALSE(same_loops_at(a, b, {1, 1, 1, 1}));
}

TEST(Finalists, TheLastScoresCountTheCrosscheckAndTheDispatchCheck) {
  // Kernel 0 predicted ahead everywhere; the dispatch check measured kernel 1 ahead at
  // M=3, where the crosscheck (M=1, 5) never paired them.
  std::vector<std::vector<int64_t>> shapes = range(1, 5);
  std::vector<schedule::AnySchedule> ks = {kernel(1), kernel(2)};
  std::vector<std::vector<double>> predicted = {{100, 100, 100, 100, 100}, {50, 50, 50, 50, 50}};
  std::vector<TuningRecord> records;
  auto add = [&](size_t k, int64_t m, double g, Origin o) {
    records.push_back(final_record(ks[k], m, g));
    records.back().origin = o;
  };
  add(0, 1, 100, Origin::Crosscheck);
  add(1, 1, 50, Origin::Crosscheck);
  add(0, 5, 100, Origin::Crosscheck);
  add(1, 5, 50, Origin::Crosscheck);
  add(0, 3, 60, Origin::DispatchCheck);
  add(1, 3, 90, Origin::DispatchCheck);
  FinalScores cross = final_scores_from(shapes, ks, predicted, records, {Origin::Crosscheck});
  EXPECT_EQ(cross.measured, 4);
  EXPECT_GT(cross.score[2][0], cross.score[2][1]);  // the model's guess at M=3
  FinalScores last = final_scores_from(shapes, ks, predicted, records,
                                       {Origin::Crosscheck, Origin::DispatchCheck});
  EXPECT_EQ(last.measured, 6);
  EXPECT_DOUBLE_EQ(last.score[2][0], 60);
  EXPECT_DOUBLE_EQ(last.score[2][1], 90);
}

TEST(Seeds, ValidAndCoverEachDeclaredShapeWithLittlePadding) {
  te::Operator op = ops::dense(1, 128, 2304, 768);
  for (schedule::Isa isa : {schedule::Isa::Avx2, schedule::Isa::Avx512})
    for (int threads : {1, 2}) {
      SearchSpace space(op, isa, threads, range(1, 128), SpaceKind::ShapeGeneric);
      std::vector<schedule::MicroKernelSchedule> seeds = space.seeds_for_shapes();
      ASSERT_FALSE(seeds.empty());
      ScheduleSet unique(seeds.begin(), seeds.end());
      EXPECT_EQ(unique.size(), seeds.size());
      const schedule::VectorIsa& vec = schedule::vector_isa(isa);
      for (const schedule::MicroKernelSchedule& s : seeds) {
        EXPECT_NO_THROW(schedule::bind(s, op)) << schedule::to_json_text(s);
        EXPECT_LE(schedule::tile_registers(s.mr, s.nr / vec.width), vec.registers);
        if (s.pack_a == schedule::PackA::Direct) {  // a deep seed
          EXPECT_LE(s.kc, SearchSpace::kDeepK);
          EXPECT_LE(s.kc * s.mr * 4, space.l1_bytes()) << "A's rows in L1";
        } else {
          EXPECT_LE(s.kc * (s.mr + s.nr) * 4, space.l1_bytes()) << "micro-panels in L1";
        }
        if (threads == 1) {
          EXPECT_EQ(s.parallel, schedule::ParallelAxis::None);
        } else {
          EXPECT_NE(s.parallel, schedule::ParallelAxis::None);
        }
      }
      for (int64_t m = 1; m <= 128; ++m) {
        double best = 0;
        for (const schedule::MicroKernelSchedule& s : seeds)
          best = std::max(best, double(m) / double(round_up(m, s.mr)));
        EXPECT_GE(best, 1.0 - SearchSpace::kSeedPadding) << "M=" << m;
      }
    }
}

TEST(Seeds, TileHeightsWhoseWidestTileUsesTheMultiplyAddRateComeFirst) {
  // AVX-512's 32 registers hold a 16 x 16 tile (16 accumulators, 17 loads per 16
  // multiply-adds: load-bound) as well as 8 x 48 (24 accumulators, 11 loads per 24); at
  // M = 16 the first seed is the strong tile that covers 16 rows exactly, and the deep
  // seed (A in place, long k blocks) has that height too and comes early. On AVX2 (16 registers)
  // the first seed of M = 16 has at least 9 accumulators (4 x 24), not 8 x 8 or 16 x 8.
  te::Operator op = ops::dense(1, 128, 2304, 768);
  for (schedule::Isa isa : {schedule::Isa::Avx512, schedule::Isa::Avx2}) {
    const schedule::VectorIsa& vec = schedule::vector_isa(isa);
    SearchSpace space(op, isa, 1, range(1, 128), SpaceKind::ShapeGeneric);
    for (int64_t m : {8, 16, 128}) {
      std::vector<schedule::MicroKernelSchedule> seeds = space.seeds_for(space.extents()[m - 1]);
      ASSERT_FALSE(seeds.empty()) << "M=" << m;
      // With the weights in cache and all of M in one row of tiles (M = 8 here) the same
      // tile in tile panels comes before it
      // (Seeds.AFewRowsOfWarmConstantBReadItFromTilePanelsFirst): the first seed in vector panels
      // is the one ranked here.
      const schedule::MicroKernelSchedule* first = nullptr;
      const schedule::MicroKernelSchedule* deep = nullptr;
      for (const schedule::MicroKernelSchedule& s : seeds) {
        if (s.b_panel != schedule::BPanel::Vector) continue;
        if (!first) first = &s;
        if (!deep && s.pack_a == schedule::PackA::Direct) deep = &s;
      }
      ASSERT_NE(first, nullptr) << "M=" << m;
      EXPECT_TRUE(seeds.front().b_panel == schedule::BPanel::Vector || m <= first->mr)
          << "M=" << m << ": tile panels first only where all of M is one row of tiles";
      const int64_t accumulators = first->mr * (first->nr / vec.width);
      EXPECT_GE(accumulators, isa == schedule::Isa::Avx512 ? 21 : 9)
          << "M=" << m << ": " << schedule::to_json_text(*first);
      EXPECT_EQ(m % first->mr, 0) << "M=" << m;
      // K = 768: a deep seed, first, with cold weights too (there the cold sweep's winners
      // at M = 1..16 were deep-k tiles, not the streaming tile).
      ASSERT_NE(deep, nullptr) << "M=" << m;
      EXPECT_EQ(deep->mr, first->mr) << "M=" << m;
      EXPECT_EQ(deep, first) << "M=" << m;
      SearchSpace cold(op, isa, 1, range(1, 128), SpaceKind::ShapeGeneric, /*cold_weights=*/true);
      std::vector<schedule::MicroKernelSchedule> cold_seeds = cold.seeds_for(cold.extents()[m - 1]);
      ASSERT_GE(cold_seeds.size(), 2u);
      // With cold weights every seed of a short product also prefetches B. Past the
      // streaming rows the deep seed comes second, behind the same tile with m the inner
      // tile loop and the next tile's B prefetched (prefetch_next).
      schedule::MicroKernelSchedule cold_deep = *deep;
      if (m <= SearchSpace::kPrefetchRows) cold_deep.prefetch_b = SearchSpace::kSeedPrefetch;
      if (m <= SearchSpace::kStreamingRows) {
        EXPECT_EQ(cold_seeds[0], cold_deep) << "M=" << m;
        EXPECT_EQ(cold_seeds[1].k_streams, 4) << "M=" << m;
      } else {
        schedule::MicroKernelSchedule m_inner = cold_deep;
        m_inner.inner_tile_loop = schedule::Axis::M;
        m_inner.prefetch_next = true;
        EXPECT_EQ(cold_seeds[0], m_inner) << "M=" << m;
        EXPECT_EQ(cold_seeds[1], cold_deep) << "M=" << m;
      }
      // With cold weights every seed of a short product also prefetches B, and past the
      // streaming rows every seed with m the inner tile loop the next tile's B; no seed
      // takes tile panels (schedule::BPanel: no faster inside a model, a packed copy per
      // width).
      for (const schedule::MicroKernelSchedule& s : cold_seeds) {
        EXPECT_EQ(s.prefetch_b, m <= SearchSpace::kPrefetchRows ? SearchSpace::kSeedPrefetch : 0)
            << "M=" << m << ": " << schedule::to_json_text(s);
        EXPECT_EQ(s.prefetch_next,
                  m > SearchSpace::kStreamingRows && s.inner_tile_loop == schedule::Axis::M)
            << "M=" << m << ": " << schedule::to_json_text(s);
        EXPECT_EQ(s.b_panel, schedule::BPanel::Vector) << "M=" << m;
      }
      for (const schedule::MicroKernelSchedule& s : seeds)
        EXPECT_FALSE(s.prefetch_next) << "M=" << m << " (weights in cache)";
      for (const schedule::MicroKernelSchedule& s : seeds)
        EXPECT_EQ(s.prefetch_b, 0) << "M=" << m << " (weights in cache)";
    }
  }
}

TEST(Seeds, AFewRowsOfWarmConstantBReadItFromTilePanelsFirst) {
  // Weights in cache, all of M in one row of tiles (M = 1..14 on AVX-512): first the deep
  // seed's tile reading B from tile-wide panels at most 4 and 6 vectors wide
  // (kTilePanelVectors), split over n in one block of columns per thread, the rest of the
  // schedule unchanged, then the deep seed in vector panels. Several rows of tiles and cold
  // weights get none.
  te::Operator op = ops::dense(1, 128, 2304, 768);
  const schedule::VectorIsa& vec = schedule::vector_isa(schedule::Isa::Avx512);
  for (int threads : {1, 2}) {
    SearchSpace warm(op, schedule::Isa::Avx512, threads, range(1, 128), SpaceKind::ShapeGeneric);
    SearchSpace cold(op, schedule::Isa::Avx512, threads, range(1, 128), SpaceKind::ShapeGeneric,
                     /*cold_weights=*/true);
    int64_t tiled_shapes = 0;
    for (int64_t m = 1; m <= 128; ++m) {
      std::vector<schedule::MicroKernelSchedule> seeds = warm.seeds_for(warm.extents()[m - 1]);
      ASSERT_FALSE(seeds.empty()) << "M=" << m;
      std::vector<schedule::MicroKernelSchedule> tiled;
      for (const schedule::MicroKernelSchedule& s : seeds)
        if (s.b_panel == schedule::BPanel::Tile) tiled.push_back(s);
      ASSERT_GT(seeds.size(), tiled.size()) << "M=" << m;
      const schedule::MicroKernelSchedule& deep = seeds[tiled.size()];
      ASSERT_EQ(deep.pack_a, schedule::PackA::Direct) << "M=" << m;
      EXPECT_EQ(deep.b_panel, schedule::BPanel::Vector) << "M=" << m;
      if (m > deep.mr) {
        EXPECT_TRUE(tiled.empty()) << "M=" << m << ": " << schedule::to_json_text(tiled.front());
        continue;
      }
      ++tiled_shapes;
      ASSERT_FALSE(tiled.empty()) << "M=" << m;
      for (size_t i = 0; i < tiled.size(); ++i) {
        EXPECT_EQ(seeds[i], tiled[i]) << "M=" << m << ": the tile panels come first";
        EXPECT_LE(tiled[i].nr, SearchSpace::kTilePanelVectors[i] * vec.width) << "M=" << m;
        schedule::MicroKernelSchedule back = tiled[i];
        back.b_panel = schedule::BPanel::Vector;
        back.nr = deep.nr;
        back.nc = deep.nc;
        EXPECT_EQ(back, deep) << "M=" << m << ": " << schedule::to_json_text(tiled[i]);
        EXPECT_EQ(tiled[i].nc % tiled[i].nr, 0) << "M=" << m;
        // Split over n, one block of columns per thread (B is read once: no L2 cap).
        if (tiled[i].parallel == schedule::ParallelAxis::N)
          EXPECT_EQ((2304 + tiled[i].nc - 1) / tiled[i].nc, threads)
              << "M=" << m << ": " << schedule::to_json_text(tiled[i]);
        EXPECT_EQ(tiled[i].parallel == schedule::ParallelAxis::N, threads > 1) << "M=" << m;
      }
      for (const schedule::MicroKernelSchedule& s : cold.seeds_for(cold.extents()[m - 1]))
        EXPECT_EQ(s.b_panel, schedule::BPanel::Vector) << "M=" << m << " (cold weights)";
    }
    // M = 1 up to the tallest one-row tile the registers hold beside a vector or more.
    EXPECT_GE(tiled_shapes, 8) << threads << " threads";
    // Round 1 measures a prefix of the rule seeds: M = 1..5's tile panels are in it.
    std::vector<SearchSpace::RuleSeed> rule = warm.rule_seeds();
    for (int64_t m = 1; m <= 5; ++m) {
      const schedule::MicroKernelSchedule first = warm.seeds_for(warm.extents()[m - 1]).front();
      EXPECT_EQ(first.b_panel, schedule::BPanel::Tile) << "M=" << m;
      auto at = std::find_if(rule.begin(), rule.end(),
                             [&](const SearchSpace::RuleSeed& r) { return r.schedule == first; });
      ASSERT_NE(at, rule.end()) << "M=" << m;
      EXPECT_LT(at - rule.begin(), 32) << "M=" << m;
    }
  }
  // M = 1: 1 x 64 and 1 x 96 in tile panels ahead of the 1 x 128 deep seed; M = 3: 3 x 64 and
  // 3 x 96 ahead of 3 x 128.
  SearchSpace warm(op, schedule::Isa::Avx512, 1, range(1, 128), SpaceKind::ShapeGeneric);
  for (int64_t m : {1, 3}) {
    std::vector<schedule::MicroKernelSchedule> seeds = warm.seeds_for(warm.extents()[m - 1]);
    ASSERT_GE(seeds.size(), 3u);
    EXPECT_EQ(seeds[0].mr, m);
    EXPECT_EQ(seeds[0].nr, 64);
    EXPECT_EQ(seeds[1].nr, 96);
    EXPECT_EQ(seeds[2].nr, 128);
    EXPECT_EQ(seeds[2].b_panel, schedule::BPanel::Vector);
  }
}

TEST(Seeds, EachOfTheSmallestShapesIsSeededBeforeLargerOnes) {
  // Every M up to kSeedShapesDense has its own best tile height (M = 11: 11 x 32); round 1
  // measures a prefix of the seeds, so each one's first seed comes before any larger
  // shape's (or is the same kernel as a smaller shape's, seeded once).
  te::Operator op = ops::dense(1, 128, 2304, 768);
  SearchSpace space(op, schedule::Isa::Avx512, 1, range(1, 128), SpaceKind::ShapeGeneric,
                    /*cold_weights=*/true);
  std::vector<SearchSpace::RuleSeed> seeds = space.rule_seeds();
  size_t prefix = 0;
  while (prefix < seeds.size() &&
         space.extents()[seeds[prefix].shape].m <= SearchSpace::kSeedShapesDense)
    ++prefix;
  EXPECT_GE(prefix, size_t(SearchSpace::kSeedShapesDense) / 2);
  for (int64_t m = 1; m <= SearchSpace::kSeedShapesDense; ++m) {
    schedule::MicroKernelSchedule first = space.seeds_for(space.extents()[size_t(m - 1)]).at(0);
    EXPECT_TRUE(std::any_of(seeds.begin(), seeds.begin() + std::ptrdiff_t(prefix),
                            [&](const SearchSpace::RuleSeed& r) { return r.schedule == first; }))
        << "M=" << m << ": " << schedule::to_json_text(first);
  }
  // M = 11's first seed: one 11-row tile, no padded row.
  EXPECT_EQ(space.seeds_for(space.extents()[10]).at(0).mr, 11);
}

TEST(Seeds, DeepKBlocksAreSizedToTheHostsL1) {
  // The deep seed's k block is the longest (up to kDeepK, dividing K evenly) whose A rows
  // fit the host's L1: 11 rows x 768 floats (33 KiB) fit a 48 KiB L1 in one block, a
  // 32 KiB one in two of 384.
  EXPECT_EQ(SearchSpace::kDeepK, 768);
  te::Operator op = ops::dense(1, 128, 2304, 768);
  SearchSpace space(op, schedule::Isa::Avx512, 1, range(1, 128), SpaceKind::ShapeGeneric,
                    /*cold_weights=*/true);
  EXPECT_EQ(space.l1_bytes(),
            host_cache_sizes().l1 > 0 ? host_cache_sizes().l1 : int64_t{32} << 10);
  schedule::MicroKernelSchedule deep = space.seeds_for(space.extents()[10]).at(0);
  ASSERT_EQ(deep.pack_a, schedule::PackA::Direct) << schedule::to_json_text(deep);
  ASSERT_EQ(deep.mr, 11);
  EXPECT_EQ(deep.kc, 11 * 768 * 4 <= space.l1_bytes() ? 768 : 384) << space.l1_bytes();
}

TEST(Seeds, ShortProductsOfConstantBWalkFourRangesOfK) {
  // Up to kStreamingRows rows cold weights stream from memory: such a shape's tiles walk
  // four ranges of k (k_streams = 4), and its tallest tile comes with one range too;
  // longer shapes and a B that changes per call (attention) get one range.
  te::Operator op = ops::dense(1, 128, 2304, 768);
  SearchSpace space(op, schedule::Isa::Avx2, 1, range(1, 128), SpaceKind::ShapeGeneric,
                    /*cold_weights=*/true);
  std::vector<SearchSpace::RuleSeed> seeds = space.rule_seeds();
  size_t streamed = 0;
  for (const SearchSpace::RuleSeed& r : seeds) {
    if (r.schedule.k_streams == 1) continue;
    EXPECT_EQ(r.schedule.k_streams, 4);
    EXPECT_LE(space.extents()[r.shape].m, SearchSpace::kStreamingRows);
    ++streamed;
  }
  EXPECT_GE(streamed, 4u);
  // M = 1 (the first shape seeded): its third seed streams (behind the deep-k tile and
  // the same without the prefetch, Seeds.TheFewestRowsOfColdWeightsAlsoTryTheHardwarePrefetcher),
  // and its one-range twin is seeded.
  std::vector<schedule::MicroKernelSchedule> m1 = space.seeds_for(space.extents()[0]);
  ASSERT_GE(m1.size(), 3u);
  EXPECT_EQ(m1[0].k_streams, 1);
  EXPECT_EQ(m1[0].pack_a, schedule::PackA::Direct);
  EXPECT_EQ(m1[1].k_streams, 1);
  EXPECT_EQ(m1[2].k_streams, 4);
  schedule::MicroKernelSchedule one = m1[2];
  one.k_streams = 1;
  EXPECT_TRUE(std::any_of(seeds.begin(), seeds.end(),
                          [&](const SearchSpace::RuleSeed& r) { return r.schedule == one; }));
  te::ShapeVar t = te::shape_var("T", 1, 128);
  te::Operator qk = ops::batch_matmul({t}, 12, t.var, t.var, 64, ops::Layout::NT);
  SearchSpace attention(qk, schedule::Isa::Avx2, 1, range(1, 128), SpaceKind::ShapeGeneric);
  for (const schedule::MicroKernelSchedule& s : attention.seeds_for_shapes())
    EXPECT_EQ(s.k_streams, 1) << schedule::to_json_text(s);
}

TEST(Seeds, TheFewestRowsOfColdWeightsAlsoTryTheHardwarePrefetcher) {
  // Cold weights: every outer-product seed of a short product prefetches B, and at most
  // kPlainPrefetchRows rows the first seed also comes without the prefetch, second, so
  // that the machine's measurement decides. Both are in the rule seeds' first rank, in
  // order, the first ones the search measures.
  te::Operator op = ops::dense(1, 128, 2304, 768);
  for (schedule::Isa isa : {schedule::Isa::Avx512, schedule::Isa::Avx2}) {
    SearchSpace cold(op, isa, 1, range(1, 128), SpaceKind::ShapeGeneric, /*cold_weights=*/true);
    std::vector<SearchSpace::RuleSeed> ranked = cold.rule_seeds();
    for (int64_t m = 1; m <= SearchSpace::kPrefetchRows; ++m) {
      std::vector<schedule::MicroKernelSchedule> seeds = cold.seeds_for(cold.extents()[m - 1]);
      ASSERT_GE(seeds.size(), 2u) << "M=" << m;
      EXPECT_EQ(seeds[0].prefetch_b, SearchSpace::kSeedPrefetch) << "M=" << m;
      int plain = 0;
      for (const schedule::MicroKernelSchedule& s : seeds)
        if (s.vector_axis == schedule::Axis::N && s.prefetch_b == 0) ++plain;
      if (m > SearchSpace::kPlainPrefetchRows) {
        EXPECT_EQ(plain, 0) << "M=" << m;
        continue;
      }
      EXPECT_EQ(plain, 1) << "M=" << m;
      schedule::MicroKernelSchedule twin = seeds[0];
      twin.prefetch_b = 0;
      EXPECT_EQ(seeds[1], twin) << "M=" << m << ": " << schedule::to_json_text(seeds[1]);
      auto at = [&](const schedule::MicroKernelSchedule& s) {
        return std::find_if(ranked.begin(), ranked.end(),
                            [&](const SearchSpace::RuleSeed& r) { return r.schedule == s; }) -
               ranked.begin();
      };
      EXPECT_EQ(at(seeds[1]), at(seeds[0]) + 1) << "M=" << m;
      EXPECT_LT(at(seeds[1]), 2 * SearchSpace::kSeedShapesDense) << "M=" << m;
    }
    // Weights in cache: no seed prefetches B, and none is doubled.
    SearchSpace warm(op, isa, 1, range(1, 128), SpaceKind::ShapeGeneric);
    for (const schedule::MicroKernelSchedule& s : warm.seeds_for(warm.extents()[0]))
      EXPECT_EQ(s.prefetch_b, 0) << schedule::to_json_text(s);
  }
}

TEST(Seeds, LongProductsAlsoGetDeepKBlocksWithAReadInPlace) {
  // K = 3072 (BERT's FFN2): besides L1-sized k blocks, each shape's tallest tile also
  // comes with k blocks of about kDeepK over A read in place; K = 512 gets none.
  te::Operator ffn2 = ops::dense(1, 128, 768, 3072);
  SearchSpace space(ffn2, schedule::Isa::Avx2, 1, range(1, 128), SpaceKind::ShapeGeneric);
  std::set<int64_t> deep_shapes;
  for (const SearchSpace::RuleSeed& r : space.rule_seeds()) {
    if (r.schedule.pack_a != schedule::PackA::Direct) continue;
    EXPECT_GE(r.schedule.kc, 512) << schedule::to_json_text(r.schedule);
    EXPECT_LE(r.schedule.kc, SearchSpace::kDeepK) << schedule::to_json_text(r.schedule);
    EXPECT_NO_THROW(schedule::bind(r.schedule, ffn2));
    deep_shapes.insert(space.extents()[r.shape].m);
  }
  EXPECT_GE(deep_shapes.size(), 4u);
  EXPECT_TRUE(deep_shapes.count(1) || deep_shapes.count(13) || deep_shapes.count(16))
      << "no deep seed at a short sequence";
  te::Operator out = ops::dense(1, 128, 768, 512);
  SearchSpace short_k(out, schedule::Isa::Avx2, 1, range(1, 128), SpaceKind::ShapeGeneric);
  for (const schedule::MicroKernelSchedule& s : short_k.seeds_for_shapes())
    EXPECT_EQ(s.pack_a, schedule::PackA::Packed) << schedule::to_json_text(s);
}

TEST(Seeds, ShortScoresGetDotProductTilesFirst) {
  // Q K^T at T <= kDotFirstColumns: the first seed of a shape is a tile of dot products
  // that pads neither rows nor columns of a 1x1, 2x2 or 3x3 product; from
  // kDotSeedColumns on, a shape gets none. A dense layer whose N is wide gets none either.
  te::ShapeVar t = te::shape_var("T", 1, 128);
  te::Operator qk = ops::batch_matmul({t}, 12, t.var, t.var, 64, ops::Layout::NT);
  SearchSpace space(qk, schedule::Isa::Avx2, 1, range(1, 128), SpaceKind::ShapeGeneric);
  std::map<int64_t, const schedule::MicroKernelSchedule*> first;
  std::set<int64_t> dot_shapes;
  std::vector<SearchSpace::RuleSeed> seeds = space.rule_seeds();
  for (const SearchSpace::RuleSeed& r : seeds) {
    const int64_t n = space.extents()[r.shape].n;
    // A shape whose own dot tile was already listed for another shape (T = 8 and T = 4
    // share 4 x 2) starts with its next seed; it counts as first when that dot tile pads
    // neither its rows nor its columns.
    if (!first.count(n) && r.schedule.vector_axis != schedule::Axis::K)
      for (const SearchSpace::RuleSeed& d : seeds) {
        if (&d == &r) break;
        if (d.schedule.vector_axis == schedule::Axis::K && n % d.schedule.mr == 0 &&
            n % d.schedule.nr == 0) {
          first.emplace(n, &d.schedule);
          break;
        }
      }
    first.emplace(n, &r.schedule);
    if (r.schedule.vector_axis != schedule::Axis::K) continue;
    dot_shapes.insert(n);
    EXPECT_NO_THROW(schedule::bind(r.schedule, qk));
    EXPECT_EQ(r.schedule.kc, 64);
  }
  // (A shape whose seeds all repeat earlier shapes' lists none.)
  for (int64_t n = 1; n <= SearchSpace::kDotFirstColumns; ++n)
    if (first.count(n)) {
      EXPECT_EQ(first[n]->vector_axis, schedule::Axis::K) << "T=" << n;
    }
  for (int64_t n = 1; n <= 3; ++n) {
    ASSERT_TRUE(first.count(n)) << "T=" << n;
    EXPECT_TRUE(first[n]->batch_inner) << "a head of a few tiles: heads innermost first";
    EXPECT_EQ(first[n]->mr, n);
    EXPECT_EQ(first[n]->nr, n);
  }
  ASSERT_FALSE(dot_shapes.empty());
  EXPECT_LE(*dot_shapes.rbegin(), SearchSpace::kDotSeedColumns);
  te::Operator qkv = ops::dense(1, 128, 2304, 768);
  SearchSpace dense(qkv, schedule::Isa::Avx2, 1, range(1, 128), SpaceKind::ShapeGeneric);
  for (const schedule::MicroKernelSchedule& s : dense.seeds_for_shapes())
    EXPECT_EQ(s.vector_axis, schedule::Axis::N) << schedule::to_json_text(s);
}

TEST(Seeds, SmallShapesFirst) {
  // Round 1 measures a prefix of the seeds: the shapes where the best tile changes fastest
  // (M = 1, 2, 3, 4, ...) must have theirs in it. With one thread each shape's first seed
  // is its own tile height, so the first four seeds cover M = 1..4 without padding.
  te::Operator op = ops::dense(1, 128, 2304, 768);
  SearchSpace space(op, schedule::Isa::Avx2, 1, range(1, 128), SpaceKind::ShapeGeneric);
  std::vector<schedule::MicroKernelSchedule> seeds = space.seeds_for_shapes();
  ASSERT_GE(seeds.size(), 4u);
  for (int64_t m = 1; m <= 4; ++m) EXPECT_EQ(seeds[m - 1].mr, m) << "seed " << m - 1;
  EXPECT_EQ(geometric_positions(128, 12),
            (std::vector<size_t>{0, 1, 2, 3, 5, 8, 13, 21, 33, 52, 81, 127}));
  EXPECT_EQ(geometric_positions(3, 12), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(geometric_positions(10, 1), (std::vector<size_t>{9}));
}

class FinalistsTunerTest : public testing::ScratchDirTest {
 protected:
  TuneOptions options(int64_t trials, int threads) const {
    TuneOptions o = testing::small_tune_options(dir_, trials);
    o.threads = threads;
    o.finalists.shapes = 4;
    return o;
  }

  static std::vector<TuningRecord> records(const TuneOptions& o) {
    return RecordFile::open({o.records_path, workload_json(o.op, o.threads), this_machine()})
        .records();
  }

  void tune_and_check(int threads) {
    TuneOptions o = options(32, threads);
    TuneReport r = tune(o);
    EXPECT_EQ(r.trials_total, 32);
    std::vector<TuningRecord> recs = records(o);
    // Round 1 measured the rule seeds.
    SearchSpace space(o.op.build(), codegen::host_target().isa, threads, o.op.declared_shapes(),
                      SpaceKind::ShapeGeneric);
    ScheduleSet first_round;
    for (size_t i = 0; i < 16 && i < recs.size(); ++i) first_round.insert(micro_kernel(recs[i]));
    int seeds_measured = 0;
    for (const auto& s : space.seeds_for_shapes()) seeds_measured += int(first_round.count(s));
    EXPECT_GE(seeds_measured, 4);
    // Finals: appended after the trials, on 4 sampled shapes, each checked and timed.
    int finals = 0;
    std::set<std::vector<int64_t>> final_shapes;
    for (const TuningRecord& rec : recs) {
      if (rec.origin != Origin::Final) continue;
      ++finals;
      final_shapes.insert(rec.shape);
      EXPECT_TRUE(rec.ok()) << rec.error;
      EXPECT_TRUE(rec.timing.has_value());
      EXPECT_LT(rec.max_rel_err, 1e-5);
    }
    EXPECT_GT(finals, 4);
    EXPECT_EQ(final_shapes, (std::set<std::vector<int64_t>>{{1}, {3}, {8}, {24}}));
    // The module's kernels are finalists or the dispatch check's challengers, each timed
    // side by side and checked, and it computes every shape correctly.
    ScheduleSet final_kernels;
    for (const TuningRecord& rec : recs)
      if ((rec.origin == Origin::Final || rec.origin == Origin::DispatchCheck) && rec.ok())
        final_kernels.insert(micro_kernel(rec));
    for (const auto& k : r.module.kernels)
      EXPECT_TRUE(final_kernels.count(std::get<schedule::MicroKernelSchedule>(k)));
    runtime::Module m = runtime::Module::compile(r.module);
    std::mt19937_64 rng(5);
    for (int64_t M : {1, 2, 7, 9, 13, 16, 23, 24, 25, 77})
      EXPECT_LT(testing::module_error(m, M, rng), 1e-5) << "M=" << M << " threads " << threads;
    // Resumed: the windows are done, nothing is measured again, the same module.
    TuneReport again = tune(o);
    EXPECT_EQ(again.trials_this_run, 0);
    EXPECT_EQ(records(o).size(), recs.size());
    EXPECT_EQ(again.module.kernels, r.module.kernels);
  }
};

TEST_F(FinalistsTunerTest, OneThread) {
  tune_and_check(1);
}
TEST_F(FinalistsTunerTest, TwoThreads) {
  tune_and_check(2);
}

// Rewrites the records file with the first `kept` of `recs`, as a run killed there
// would have left it.
void keep_first(const TuneOptions& o, const std::vector<TuningRecord>& recs, size_t kept) {
  fs::remove(o.records_path);
  RecordFile f = RecordFile::open({o.records_path, workload_json(o.op, o.threads), this_machine()});
  for (size_t i = 0; i < kept; ++i) f.append(recs[i]);
}

// The index past the trailing run of records of `origin` (on `shape` if given).
size_t before_tail(const std::vector<TuningRecord>& recs, Origin origin,
                   const std::vector<int64_t>* shape = nullptr) {
  size_t i = recs.size();
  while (i > 0 && recs[i - 1].origin == origin && (!shape || recs[i - 1].shape == *shape)) --i;
  return i;
}

TEST_F(FinalistsTunerTest, AKilledFinalPhaseResumesTheMissingWindows) {
  TuneOptions o = options(32, 1);
  o.finalists.dispatch_check = 0;  // the crosscheck last (its own test below)
  tune(o);
  std::vector<TuningRecord> recs = records(o);
  // Killed during the finals' last window: its finals and the whole crosscheck missing.
  const size_t finals_end = before_tail(recs, Origin::Crosscheck);
  ASSERT_LT(finals_end, recs.size()) << "the crosscheck ran";
  std::vector<TuningRecord> finals(recs.begin(), recs.begin() + finals_end);
  const std::vector<int64_t> last = finals.back().shape;
  const size_t kept = before_tail(finals, Origin::Final, &last);
  ASSERT_LT(kept, finals_end);
  keep_first(o, recs, kept);
  TuneReport r = tune(o);
  EXPECT_EQ(r.trials_this_run, 0);
  std::vector<TuningRecord> after = records(o);
  // The missing window measured again, then the crosscheck.
  ASSERT_GT(after.size(), finals_end);
  for (size_t i = kept; i < finals_end; ++i) {
    EXPECT_EQ(after[i].origin, Origin::Final);
    EXPECT_EQ(after[i].shape, last);
  }
  for (size_t i = finals_end; i < after.size(); ++i) EXPECT_EQ(after[i].origin, Origin::Crosscheck);
}

TEST_F(FinalistsTunerTest, AKilledCrosscheckResumesTheMissingWindows) {
  TuneOptions o = options(32, 1);
  o.finalists.dispatch_check = 0;  // the crosscheck last (its own test below)
  const runtime::ModuleSpec first = tune(o).module;
  std::vector<TuningRecord> recs = records(o);
  const std::vector<int64_t> last = recs.back().shape;
  const size_t kept = before_tail(recs, Origin::Crosscheck, &last);
  ASSERT_LT(kept, recs.size());
  // A crosscheck window holds every kernel of the first selection: at least the final
  // module's.
  EXPECT_GE(recs.size() - kept, first.kernels.size());
  keep_first(o, recs, kept);
  TuneReport r = tune(o);
  EXPECT_EQ(r.trials_this_run, 0);
  std::vector<TuningRecord> after = records(o);
  EXPECT_EQ(after.size(), recs.size());  // only the missing window measured again
  for (size_t i = kept; i < after.size(); ++i) {
    EXPECT_EQ(after[i].origin, Origin::Crosscheck);
    EXPECT_EQ(after[i].shape, last);
  }
  // Decided again among the first selection's kernels: those of the last crosscheck
  // window (every window holds all of them), of which the final module may drop some.
  std::vector<schedule::AnySchedule> selected;
  for (size_t i = kept; i < recs.size(); ++i) selected.push_back(recs[i].schedule);
  for (const schedule::AnySchedule& k : first.kernels)
    EXPECT_NE(std::find(selected.begin(), selected.end(), k), selected.end());
  for (const schedule::AnySchedule& k : r.module.kernels)
    EXPECT_NE(std::find(selected.begin(), selected.end(), k), selected.end());
}

TEST_F(FinalistsTunerTest, TheDispatchCheckPairsKernelsBetweenTheSampledShapesAndResumes) {
  // The measured timings decide how many kernels are selected; with one, nothing is
  // paired: other seeds (each with records of its own) before giving up.
  TuneOptions o = options(32, 1);
  runtime::ModuleSpec first;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    o.seed = seed;
    o.records_path = (dir_ / ("records-seed" + std::to_string(seed) + ".jsonl")).string();
    first = tune(o).module;
    if (first.kernels.size() >= 2) break;
  }
  std::vector<TuningRecord> recs = records(o);
  std::set<std::vector<int64_t>> sampled, checked;
  for (const TuningRecord& r : recs) {
    if (r.origin == Origin::Crosscheck) sampled.insert(r.shape);
    if (r.origin != Origin::DispatchCheck) continue;
    checked.insert(r.shape);
    EXPECT_TRUE(r.ok()) << r.error;
    EXPECT_LT(r.max_rel_err, 1e-5);
  }
  if (first.kernels.size() < 2)
    GTEST_SKIP() << "one kernel selected with four seeds: nothing to pair";
  // Shapes the finals did not sample, measured side by side after the crosscheck.
  ASSERT_FALSE(checked.empty());
  for (const auto& shape : checked) EXPECT_FALSE(sampled.count(shape));
  const size_t check_start = before_tail(recs, Origin::DispatchCheck);
  EXPECT_EQ(recs[check_start - 1].origin, Origin::Crosscheck);
  // Killed during the last window: only that window measured again.
  const std::vector<int64_t> last = recs.back().shape;
  const size_t kept = before_tail(recs, Origin::DispatchCheck, &last);
  ASSERT_LT(kept, recs.size());
  keep_first(o, recs, kept);
  TuneReport r = tune(o);
  EXPECT_EQ(r.trials_this_run, 0);
  std::vector<TuningRecord> after = records(o);
  EXPECT_EQ(after.size(), recs.size());
  for (size_t i = kept; i < after.size(); ++i) {
    EXPECT_EQ(after[i].origin, Origin::DispatchCheck);
    EXPECT_EQ(after[i].shape, last);
  }
  // The window's kernels timed afresh may decide differently, but only among the kernels
  // of the crosscheck and the dispatch check (its challengers), and the decision is the
  // records': run again on them, the same.
  std::vector<schedule::AnySchedule> pool;
  for (const TuningRecord& rec : recs)
    if (rec.origin == Origin::Crosscheck || rec.origin == Origin::DispatchCheck)
      pool.push_back(rec.schedule);
  for (const schedule::AnySchedule& k : r.module.kernels)
    EXPECT_NE(std::find(pool.begin(), pool.end(), k), pool.end());
  TuneReport again = tune(o);
  EXPECT_EQ(again.trials_this_run, 0);
  EXPECT_EQ(records(o).size(), after.size());
  EXPECT_EQ(again.module.kernels, r.module.kernels);
}

}  // namespace
}  // namespace dietcode::tune
