// How much work one call of an operator does at a shape, in the unit its speed is
// reported in: what tuning records, the measurement worker and benchmarks divide by time.
//
//   contraction   2 * M * N * K (x batch) floating-point operations      GFLOP/s
//   attention     4 * slices * T^2 * D operations (Q K^T and P V)       GFLOP/s
//   row operator  bytes moved once: every input read, the output written  GB/s
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "te/tensor.h"

namespace dietcode::ops {

struct Work {
  double amount = 0;      // operations, or bytes
  std::string_view unit;  // "GFLOP/s" or "GB/s": amount / seconds * 1e-9
};

// Throws dietcode::Error for an operator none of the matchers recognizes.
Work work_of(const te::Operator& op, const std::vector<int64_t>& shape);

}  // namespace dietcode::ops
