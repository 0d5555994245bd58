// Integer rounding for tile, block and allocation arithmetic (tile counts, padded
// extents, aligned byte counts): the one definition of each. The IR's symbolic
// counterpart is ir::ceil_div on expressions (ir/expr.h). Header-only and standard
// library only, so the export runtime archive can use it too.
#pragma once

#include <concepts>
#include <cstdint>
#include <type_traits>

namespace dietcode {

// ceil(a / b) for a >= 0, b > 0: the number of b-sized tiles covering a. (The second
// argument takes the first one's type: ceil_div(bytes, 64) with size_t bytes.)
template <std::integral T>
constexpr T ceil_div(T a, std::type_identity_t<T> b) {
  return (a + b - 1) / b;
}

// The smallest multiple of m that is >= x, for x >= 0, m > 0.
template <std::integral T>
constexpr T round_up(T x, std::type_identity_t<T> m) {
  return ceil_div(x, m) * m;
}

static_assert(ceil_div<int64_t>(0, 4) == 0 && ceil_div<int64_t>(1, 4) == 1 &&
              ceil_div<int64_t>(8, 4) == 2 && ceil_div<int64_t>(9, 4) == 3);
static_assert(round_up<int64_t>(0, 8) == 0 && round_up<int64_t>(1, 8) == 8 &&
              round_up<int64_t>(16, 8) == 16 && round_up<int64_t>(17, 8) == 24 &&
              round_up<size_t>(65, 64) == 128);

}  // namespace dietcode
