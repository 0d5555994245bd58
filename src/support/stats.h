// Small statistics shared by the tuner and the reports.
#pragma once

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

}  // namespace dietcode
