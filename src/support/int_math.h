// Integer rounding for tile and block arithmetic (tile counts, padded extents). The
// IR's symbolic counterpart is ir::ceil_div on expressions (ir/expr.h).
#pragma once

#include <cstdint>

namespace dietcode {

// ceil(a / b) for a >= 0, b > 0: the number of b-sized tiles covering a.
constexpr int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// The smallest multiple of m that is >= x, for x >= 0, m > 0.
constexpr int64_t round_up(int64_t x, int64_t m) {
  return ceil_div(x, m) * m;
}

static_assert(ceil_div(0, 4) == 0 && ceil_div(1, 4) == 1 && ceil_div(8, 4) == 2 &&
              ceil_div(9, 4) == 3);
static_assert(round_up(0, 8) == 0 && round_up(1, 8) == 8 && round_up(16, 8) == 16 &&
              round_up(17, 8) == 24);

}  // namespace dietcode
