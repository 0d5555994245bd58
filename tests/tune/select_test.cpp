// Greedy cover selection and the dispatch tree built from it.
#include "tune/select.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "test_support.h"

namespace dietcode::tune {
namespace {

TEST(Select, OneKernelBestEverywhereIsAllItTakes) {
  std::vector<std::vector<double>> score = {{10, 5, 1}, {20, 19, 2}, {30, 1, 29}};
  Selection s = select_micro_kernels(score, {1, 1, 1}, 4);
  ASSERT_EQ(s.kernels, std::vector<int>{0});
  EXPECT_EQ(s.assignment, (std::vector<int>{0, 0, 0}));
}

TEST(Select, CoversEachShapeWithItsBestWhenAllowed) {
  // Each shape has a different clear winner.
  std::vector<std::vector<double>> score = {{10, 1, 1}, {1, 10, 1}, {1, 1, 10}};
  Selection s = select_micro_kernels(score, {1, 1, 1}, 3);
  EXPECT_EQ(s.kernels.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(s.kernels[s.assignment[i]], int(i));
}

TEST(Select, GrowsKToRespectTheKernelBudget) {
  // Kernel 3 is second best everywhere; with a budget of 1 it is the one to pick.
  std::vector<std::vector<double>> score = {{10, 1, 1, 9}, {1, 10, 1, 9}, {1, 1, 10, 9}};
  Selection s = select_micro_kernels(score, {1, 1, 1}, 1);
  ASSERT_EQ(s.kernels, std::vector<int>{3});
  EXPECT_GE(s.top_k, 2);
}

TEST(Select, AssignsTheBestSelectedKernelPerShape) {
  std::vector<std::vector<double>> score;
  for (int m = 0; m < 50; ++m) score.push_back({m < 25 ? 10.0 : 5.0, m < 25 ? 5.0 : 10.0, 6.0});
  Selection s = select_micro_kernels(score, std::vector<double>(50, 1.0), 8);
  for (int m = 0; m < 50; ++m)
    EXPECT_EQ(s.kernels[s.assignment[m]], m < 25 ? 0 : 1) << "M index " << m;
}

TEST(Select, SpareSlotsGoToShapesLeftBelowTheirBest) {
  // Kernel 0 is (near-)best for the 20 long shapes and 80% of the best for the short one
  // (shape 0), whose own best, kernel 1, is poor elsewhere; kernel 2 is 1% ahead on one
  // long shape. A budget of 2 makes the cover grow to k = 2, where kernel 0 alone covers
  // every shape; the spare slot goes to kernel 1 (25% for shape 0), not kernel 2 (1%).
  auto scores = [](double short_on_0) {
    std::vector<std::vector<double>> score = {{short_on_0, 10, 1}};
    for (int m = 1; m <= 20; ++m)
      score.push_back(m == 5 ? std::vector<double>{9.9, 2, 10} : std::vector<double>{10, 2, 9.9});
    return score;
  };
  std::vector<std::vector<double>> score = scores(8);
  std::vector<double> weights(score.size(), 1.0);
  Selection s = select_micro_kernels(score, weights, 2);
  ASSERT_EQ(s.kernels, (std::vector<int>{0, 1}));
  EXPECT_EQ(s.kernels[s.assignment[0]], 1);
  for (size_t m = 1; m < score.size(); ++m) EXPECT_EQ(s.kernels[s.assignment[m]], 0);
  // Without room, the cover's choice stands; a 2% gain does not earn a slot.
  EXPECT_EQ(select_micro_kernels(score, weights, 1).kernels, std::vector<int>{0});
  EXPECT_EQ(select_micro_kernels(scores(9.8), weights, 2).kernels, std::vector<int>{0});
}

TEST(Select, SwapsRaiseTheGeomeanWhereTheCoverFilledEverySlot) {
  // With a budget of two the cover grows to k = 2 and picks kernel 0 (second or better on
  // every shape but one) and kernel 1 (shape 0's best), leaving shape 1 on kernel 0 at
  // 0.80 of its best and shape 2 at 0.90; swapping kernel 1 for kernel 3 puts every shape
  // at 0.94 of its best or better (geomean 0.92 -> 0.99).
  std::vector<std::vector<double>> score = {{8.01, 9.54, 9.53, 9.04},
                                            {8.03, 1.03, 1.04, 10.03},
                                            {9.04, 9.03, 8.0, 10.02},
                                            {9.03, 1.03, 5.04, 1.01}};
  Selection s = select_micro_kernels(score, std::vector<double>(score.size(), 1.0), 2);
  std::vector<int> kernels = s.kernels;
  std::sort(kernels.begin(), kernels.end());
  ASSERT_EQ(kernels, (std::vector<int>{0, 3}));
  for (size_t m = 0; m < score.size(); ++m) {
    const double best = *std::max_element(score[m].begin(), score[m].end());
    EXPECT_GE(score[m][s.kernels[s.assignment[m]]], 0.94 * best) << "shape " << m;
  }
}

// Kernels 0 and 3 pack the weights in layout 10, kernel 1 in 20, kernel 2 in 30; kernel 4
// reads them as given. Shape 0's best is kernel 1, shape 1's kernel 2, shapes 2 and 3's
// kernel 0; kernel 4 is far ahead on shape 4.
std::vector<std::vector<double>> layered_scores() {
  return {{8, 10, 5, 7, 1}, {9, 5, 10, 8, 1}, {10, 5, 5, 9, 1}, {10, 5, 5, 9, 1}, {5, 1, 1, 5, 10}};
}
std::vector<uint64_t> layered_layouts() {
  return {10, 20, 30, 10, 0};
}

std::vector<uint64_t> layouts_of(const Selection& s) {
  const std::vector<uint64_t> layouts = layered_layouts();
  std::vector<uint64_t> out;
  for (int k : s.kernels)
    if (layouts[k] != 0 && std::find(out.begin(), out.end(), layouts[k]) == out.end())
      out.push_back(layouts[k]);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Select, KernelsSpanNoMoreWeightLayoutsThanAllowed) {
  const std::vector<std::vector<double>> score = layered_scores();
  const std::vector<double> weights(score.size(), 1.0);
  // No limit: each shape on its best, three packed copies of the weights.
  Selection free = select_micro_kernels(score, weights, 8);
  EXPECT_EQ(layouts_of(free), (std::vector<uint64_t>{10, 20, 30}));
  EXPECT_EQ(layouts_of(select_micro_kernels(score, weights, 8, layered_layouts(), 0)),
            layouts_of(free));
  EXPECT_EQ(layouts_of(select_micro_kernels(score, weights, 8, layered_layouts(), 3)),
            layouts_of(free));
  // One layout: 10, whose kernels come closest to every shape's best (0.8, 0.9, 1, 1 on
  // shapes 0-3); the kernel without packed weights stays selectable.
  Selection one = select_micro_kernels(score, weights, 8, layered_layouts(), 1);
  EXPECT_EQ(layouts_of(one), std::vector<uint64_t>{10});
  EXPECT_EQ(one.kernels[one.assignment[4]], 4);
  EXPECT_EQ(one.kernels[one.assignment[2]], 0);
  // Two: 10 and 20 (shape 0 gains 25% from layout 20, shape 1 11% from 30).
  Selection two = select_micro_kernels(score, weights, 8, layered_layouts(), 2);
  EXPECT_EQ(layouts_of(two), (std::vector<uint64_t>{10, 20}));
  EXPECT_EQ(two.kernels[two.assignment[0]], 1);
  EXPECT_EQ(two.kernels[two.assignment[1]], 0);
  // Every assignment points into the selection, and the columns are the caller's.
  for (const Selection* s : {&one, &two})
    for (size_t m = 0; m < score.size(); ++m) {
      ASSERT_GE(s->assignment[m], 0);
      ASSERT_LT(s->assignment[m], int(s->kernels.size()));
    }
}

TEST(Select, ALayoutBudgetChoosesAmongTheTwelveBestLayouts) {
  // Fourteen kernels, each in a layout of its own and best on one shape of its own.
  const int n = 14;
  std::vector<std::vector<double>> score(n, std::vector<double>(n, 5.0));
  std::vector<uint64_t> layouts;
  for (int j = 0; j < n; ++j) {
    score[j][j] = 10;
    layouts.push_back(uint64_t(100 + j));
  }
  const std::vector<double> weights(n, 1.0);
  auto copies = [&](int budget) {
    Selection s = select_micro_kernels(score, weights, n, layouts, budget);
    std::set<uint64_t> used;
    for (int k : s.kernels) used.insert(layouts[k]);
    return used.size();
  };
  EXPECT_EQ(copies(0), size_t(n));    // no limit
  EXPECT_EQ(copies(n), size_t(n));    // a budget no smaller than the layouts: no limit
  EXPECT_EQ(copies(13), size_t(12));  // a real limit chooses among the twelve best
  EXPECT_EQ(copies(2), size_t(2));
  EXPECT_EQ(copies(1), size_t(1));
}

TEST(Select, AWeightedShapeDecidesWhichLayoutIsKept) {
  // With shape 1 weighing forty times the others, layout 30 (its best) is kept over 10:
  // shape 1 at 0.9 of its best costs 40 log 0.9 = -4.2 against 3 log 0.5 = -2.1.
  std::vector<double> weights(5, 1.0);
  weights[1] = 40;
  Selection s = select_micro_kernels(layered_scores(), weights, 8, layered_layouts(), 1);
  EXPECT_EQ(layouts_of(s), std::vector<uint64_t>{30});
  EXPECT_EQ(s.kernels[s.assignment[1]], 2);
}

TEST(Select, NothingMeasuredIsAClearError) {
  EXPECT_USER_ERROR(select_micro_kernels({}, {}, 4), "no measured micro-kernel");
}

TEST(DispatchTree, MapsEveryDeclaredShapeToItsAssignment) {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int> labels;
  for (int64_t m = 1; m <= 128; ++m) {
    shapes.push_back({m});
    labels.push_back(m <= 3 ? 0 : (m % 7 == 0 ? 2 : 1));
  }
  dispatch::DecisionTree t = build_dispatch_tree(shapes, labels);
  for (size_t i = 0; i < shapes.size(); ++i) EXPECT_EQ(t.select(shapes[i]), labels[i]);
  EXPECT_EQ(t.select({100000}), labels.back());  // beyond every sample: the last one's
}

}  // namespace
}  // namespace dietcode::tune
