// Integer helpers for tile arithmetic (non-negative operands, positive divisors).
#pragma once

#include <cstdint>

namespace dietcode {

constexpr int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// The smallest multiple of `m` that is >= x.
constexpr int64_t round_up(int64_t x, int64_t m) {
  return ceil_div(x, m) * m;
}

}  // namespace dietcode
