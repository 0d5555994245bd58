// A CPU schedule of a row operator (ops/row_op.h: elementwise work, LayerNorm, softmax),
// the second schedule kind beside MicroKernelSchedule, with the same four pieces: typed
// fields with `operator==`, digest(), JSON, and bind() against its operator.
//
// Loop structure it describes:
//
//   for task in ceil(rows / rows_per_task)          parallel tasks when `parallel`
//     for group of `interleave` rows in the task's rows (then the task's last rows one by one)
//       for each pass over the group's rows         one per reduction, or one per group of
//         acc[unroll] = identity                    independent reductions when `passes`
//         for j by vector width * unroll: acc[u] op= e(row, j + u*W)       is Fused
//         for j by vector width:          acc[0] op= e(row, j)
//         masked tail (L not a multiple of W)
//         stage = f(horizontal op of acc)      (accumulators and stages per row of the group)
//       for j by vector width * unroll: out[row, j..] = g(row, j..)   (then by W, then masked)
//
// A group's rows advance together through each pass: their reductions are independent
// chains, which the core overlaps, where one row at a time waits on each horizontal
// reduction (the latency that bounds short rows: softmax over 16 keys, LayerNorm's three
// passes).
//
// The vector width is the ISA's (8 fp32 lanes for AVX2, 16 for AVX-512); the row
// length is any value of its extent, including 1 and primes.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "ops/row_op.h"
#include "schedule/micro_kernel.h"

namespace dietcode::schedule {

// Separate: one pass over the row per reduction. Fused: reductions that do not read one
// another share a pass (LayerNorm written with E[x^2] - E[x]^2 would need one pass;
// written with E[(x - mean)^2] it needs two either way).
enum class ReductionPasses : uint8_t { Separate, Fused };
std::string_view to_string(ReductionPasses p);

struct RowSchedule {
  Target target = Target::Cpu;
  Isa isa = Isa::Avx2;
  int64_t rows_per_task = 4;  // rows of one parallel task, in [1, 4096]
  int64_t unroll = 2;    // vectors per step of the main loop (independent accumulators), [1, 8]
  bool parallel = true;  // tasks run on the thread pool, or all on the caller's thread
  ReductionPasses passes = ReductionPasses::Fused;
  // Rows computed together, [1, 8]; at most rows_per_task take part. Optional in JSON
  // (default 1: schedules written before the field existed).
  int64_t interleave = 1;

  bool operator==(const RowSchedule&) const = default;
  // Stable FNV-1a over the fields, tagged so that it never equals a contraction digest
  // of the same numbers.
  uint64_t digest() const;
};

nlohmann::json to_json(const RowSchedule& s);  // {"kind": "row", ...}
// Throws dietcode::Error naming the field that is missing, mistyped, unknown or out of range.
RowSchedule row_schedule_from_json(const nlohmann::json& j);
RowSchedule row_schedule_from_json_text(const std::string& text);
std::string to_json_text(const RowSchedule& s);  // one line

// Ranges of rows_per_task and unroll. Throws dietcode::Error saying why.
void validate(const RowSchedule& s);

// A row schedule validated against its operator, carrying the matched row operator.
class BoundRowSchedule {
 public:
  const RowSchedule& schedule() const { return schedule_; }
  const te::Operator& op() const { return op_; }
  const ops::RowOp& row_op() const { return row_op_; }

 private:
  friend BoundRowSchedule bind(const RowSchedule&, const te::Operator&);
  BoundRowSchedule(RowSchedule s, te::Operator op, ops::RowOp r)
      : schedule_(s), op_(std::move(op)), row_op_(std::move(r)) {}
  RowSchedule schedule_;
  te::Operator op_;
  ops::RowOp row_op_;
};

// validate(s), then match the operator as a row operator. Throws dietcode::Error.
BoundRowSchedule bind(const RowSchedule& s, const te::Operator& op);

// A uniformly random valid row schedule for `isa` (for `dietcode verify` and tests).
template <typename Rng>
RowSchedule random_row_schedule(Rng& rng, Isa isa) {
  auto pick = [&](int64_t lo, int64_t hi) { return lo + int64_t(rng() % uint64_t(hi - lo + 1)); };
  static constexpr int64_t kRows[] = {1, 2, 3, 4, 8, 16, 32};
  RowSchedule s;
  s.isa = isa;
  s.rows_per_task = kRows[pick(0, 6)];
  s.unroll = pick(1, 4);
  s.parallel = pick(0, 1) == 1;
  s.passes = pick(0, 1) ? ReductionPasses::Fused : ReductionPasses::Separate;
  static constexpr int64_t kInterleave[] = {1, 2, 3, 4};
  s.interleave = kInterleave[pick(0, 3)];
  return s;
}

}  // namespace dietcode::schedule
