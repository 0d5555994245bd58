// Small statistics shared by the tuner and the reports.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace dietcode {

// Geometric mean of the positive values (others are skipped); 0 if there are none.
inline double geomean(const std::vector<double>& values) {
  double sum = 0;
  int64_t n = 0;
  for (double v : values)
    if (v > 0) {
      sum += std::log(v);
      ++n;
    }
  return n > 0 ? std::exp(sum / double(n)) : 0;
}

// Student's t quantile at 0.975 for `df` degrees of freedom (>= 1): the table to 30, then
// the Cornish-Fisher series in 1 / df (within 0.05% of the exact value there).
inline double student_t975(int64_t df) {
  static constexpr double kTable[30] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                        2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                        2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                        2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) df = 1;
  if (df <= 30) return kTable[df - 1];
  const double z = 1.959964, f = double(df);
  return z + (z * z * z + z) / (4 * f) +
         (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * f * f);
}

// The time ratio of two variants from calls made in pairs, one of each back to back (in
// ABBA order): the geomean of the pairs' ratios b[i] / a[i] and its 95% interval, the mean
// log-ratio +- t(0.975, n - 1) standard errors. A shared VM's speed drifts by 30-50% over
// seconds, so two medians taken a minute apart can differ by more than the change being
// measured; the calls of a pair meet the same machine.
struct PairedRatio {
  double ratio = 0, low = 0, high = 0;
};

// Times two variants in `n` pairs of calls, ABBA (A then B, then B then A, ...), so that a
// drift of the machine's speed falls on both alike: a(i) and b(i) run call i of each and
// return its seconds, collected in order into `ta` and `tb`.
template <typename CallA, typename CallB>
void time_in_pairs(int n, CallA&& a, CallB&& b, std::vector<double>& ta, std::vector<double>& tb) {
  for (int i = 0; i < n; ++i) {
    if (i % 2 == 0) {
      ta.push_back(a(i));
      tb.push_back(b(i));
    } else {
      tb.push_back(b(i));
      ta.push_back(a(i));
    }
  }
}

inline PairedRatio paired_ratio(const std::vector<double>& a, const std::vector<double>& b) {
  const size_t n = std::min(a.size(), b.size());
  if (n == 0) return {};
  std::vector<double> d;
  for (size_t i = 0; i < n; ++i) d.push_back(std::log(b[i] / a[i]));
  double mean = 0;
  for (double x : d) mean += x / double(n);
  if (n < 2) return {std::exp(mean), std::exp(mean), std::exp(mean)};
  double var = 0;
  for (double x : d) var += (x - mean) * (x - mean) / double(n - 1);
  const double t = student_t975(int64_t(n) - 1);
  const double half = t * std::sqrt(var / double(n));
  return {std::exp(mean), std::exp(mean - half), std::exp(mean + half)};
}

}  // namespace dietcode
