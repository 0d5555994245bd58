// How the bench interleaves implementations on one shape (benchmark/interleave.h).
#include "benchmark/interleave.h"

#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <utility>
#include <vector>

namespace dietcode::bench {
namespace {

TEST(Interleave, EachBurstTakesAboutItsShareOfTheMeasurement) {
  // 50 ms over 5 rounds: 10 ms a burst. A 1 ms call gets 10 calls, 0.25 ms 40, and a
  // 7 ms library (BLIS on the 2304 x 768 layer) 2, without shrinking the others' bursts.
  EXPECT_EQ(calls_per_burst(1e-3, 0.05, 5), 10);
  EXPECT_EQ(calls_per_burst(0.25e-3, 0.05, 5), 40);
  EXPECT_EQ(calls_per_burst(7e-3, 0.05, 5), BurstPlan::kMinCalls);
  // Clamped at both ends, whatever the screen said (a zero or a failed screen).
  EXPECT_EQ(calls_per_burst(1e-9, 0.05, 5), BurstPlan::kMaxCalls);
  EXPECT_EQ(calls_per_burst(0.0, 0.05, 5), BurstPlan::kMaxCalls);
  EXPECT_EQ(calls_per_burst(10.0, 0.05, 5), BurstPlan::kMinCalls);
  EXPECT_EQ(calls_per_burst(std::numeric_limits<double>::infinity(), 0.05, 5),
            BurstPlan::kMinCalls);
  // Bursts of different implementations last about as long as each other.
  for (double a : {0.3e-3, 0.8e-3, 2e-3}) {
    const double burst = calls_per_burst(a, 0.05, 5) * a;
    EXPECT_GT(burst, 0.005) << a;
    EXPECT_LE(burst, 0.010 + 1e-12) << a;
  }
}

TEST(Interleave, TheOrderReversesEveryOtherRoundSoNeighboursAlternate) {
  const size_t n = 4;
  std::set<std::pair<size_t, size_t>> followed;  // (predecessor, implementation)
  for (int round = 0; round < 5; ++round) {
    std::vector<size_t> order;
    for (size_t i = 0; i < n; ++i) order.push_back(implementation_at(round, i, n));
    std::set<size_t> each(order.begin(), order.end());
    EXPECT_EQ(each.size(), n) << "round " << round << ": every implementation once";
    EXPECT_EQ(order.front(), round % 2 ? n - 1 : 0) << "round " << round;
    for (size_t i = 1; i < n; ++i) followed.insert({order[i - 1], order[i]});
  }
  // Within rounds, implementation 1 follows 0 in even rounds and 2 in odd ones; the last
  // runs first every other round.
  EXPECT_TRUE(followed.count({0, 1}));
  EXPECT_TRUE(followed.count({2, 1}));
  EXPECT_TRUE(followed.count({n - 1, n - 2}));
  EXPECT_EQ(followed.size(), 2 * (n - 1));
}

}  // namespace
}  // namespace dietcode::bench
