// The statistics of support/stats.h: the paired ratio of two variants' times and its 95%
// interval, against values worked by hand; Student's t against the table and its series.
#include "support/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace dietcode;

TEST(Stats, PairedRatioAndItsInterval) {
  // Every pair twice as slow: ratio 2, no spread.
  PairedRatio same = paired_ratio({1, 3, 5, 7}, {2, 6, 10, 14});
  EXPECT_NEAR(same.ratio, 2.0, 1e-12);
  EXPECT_NEAR(same.low, 2.0, 1e-12);
  EXPECT_NEAR(same.high, 2.0, 1e-12);
  // Log-ratios 0.1, -0.1, 0.2, 0: mean 0.05, standard deviation sqrt(0.05 / 3), t(3) =
  // 3.182: half-width 3.182 * 0.1291 / 2 = 0.2054.
  std::vector<double> a = {1, 1, 1, 1}, b = {std::exp(0.1), std::exp(-0.1), std::exp(0.2), 1};
  PairedRatio p = paired_ratio(a, b);
  const double half = 3.182 * std::sqrt(0.05 / 3) / 2;
  EXPECT_NEAR(p.ratio, std::exp(0.05), 1e-12);
  EXPECT_NEAR(p.low, std::exp(0.05 - half), 1e-9);
  EXPECT_NEAR(p.high, std::exp(0.05 + half), 1e-9);
  EXPECT_LT(p.low, p.ratio);
  EXPECT_GT(p.high, p.ratio);
  // One pair: the ratio, no interval; none: zeros.
  PairedRatio one = paired_ratio({2}, {3});
  EXPECT_NEAR(one.ratio, 1.5, 1e-12);
  EXPECT_EQ(one.low, one.high);
  EXPECT_EQ(paired_ratio({}, {}).ratio, 0);
}

TEST(Stats, StudentTQuantile) {
  EXPECT_DOUBLE_EQ(student_t975(1), 12.706);
  EXPECT_DOUBLE_EQ(student_t975(3), 3.182);
  EXPECT_DOUBLE_EQ(student_t975(30), 2.042);
  EXPECT_NEAR(student_t975(31), 2.0395, 5e-4);  // the series past the table
  EXPECT_NEAR(student_t975(60), 2.0003, 5e-4);
  EXPECT_NEAR(student_t975(1000000), 1.95997, 1e-4);
}

TEST(Stats, TimeInPairsAlternatesTheOrder) {
  std::vector<char> order;
  std::vector<double> ta, tb;
  time_in_pairs(
      4,
      [&](int i) {
        order.push_back('A');
        return double(i);
      },
      [&](int i) {
        order.push_back('B');
        return 10.0 + i;
      },
      ta, tb);
  EXPECT_EQ(std::string(order.begin(), order.end()), "ABBAABBA");
  EXPECT_EQ(ta, (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(tb, (std::vector<double>{10, 11, 12, 13}));
}
