// `dietcode verify` (after oneDNN's benchdnn): micro-kernels x shapes, every generated
// kernel checked against the float64 reference on fresh random inputs with the output
// poisoned (NaN) first.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "schedule/attention_schedule.h"
#include "schedule/micro_kernel.h"
#include "schedule/row_schedule.h"
#include "te/tensor.h"

namespace dietcode::reference {

struct VerifyOptions {
  int schedules = 20;  // random valid micro-kernels to draw
  uint64_t seed = 1;   // schedules and inputs
  std::optional<schedule::Isa> isa;  // of the drawn schedules; none: the host's
  // Check this one schedule instead of drawing (validated against the operator).
  std::optional<schedule::MicroKernelSchedule> schedule;
  // The same for a row operator (which draws random row schedules otherwise).
  std::optional<schedule::RowSchedule> row_schedule;
  // The same for fused attention (ops/attention.h).
  std::optional<schedule::AttentionSchedule> attention_schedule;
  double tolerance = 1e-5;  // largest relative Frobenius error accepted
};

struct VerifyFailure {
  std::string schedule_json;  // the failing schedule, either kind, as one line of JSON
  int64_t m = 0;
  double error = 0;
};

struct VerifyResult {
  int passed = 0, failed = 0;
};

// Row operators (ops/row_op.h) are checked under random row schedules, fused attention
// (ops/attention.h) under random attention schedules, contractions under random
// micro-kernels. Checks every schedule on every M of `m_values`; calls `on_failure`
// for each failing (schedule, M) as it is found. Throws dietcode::Error for bad options.
VerifyResult verify_kernels(const te::Operator& op, const std::vector<int64_t>& m_values,
                            const VerifyOptions& options,
                            const std::function<void(const VerifyFailure&)>& on_failure);

}  // namespace dietcode::reference
