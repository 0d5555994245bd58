// A schedule of any kind: what modules, tuning records and the measurement worker carry,
// so that they need not know which kinds exist.
//
//   MicroKernelSchedule  contractions (dense, batch_matmul)      JSON: no "kind" field
//   RowSchedule          row operators (LayerNorm, softmax, ...)  JSON: "kind": "row"
//   AttentionSchedule    fused attention                          JSON: "kind": "attention"
//
// Which kind an operator is compiled under follows from the operator
// (`kind_of_operator`); a schedule of another kind is refused by bind().
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <unordered_set>
#include <variant>

#include "schedule/attention_schedule.h"
#include "schedule/micro_kernel.h"
#include "schedule/row_schedule.h"

namespace dietcode::ops {
struct OperatorSpec;
}

namespace dietcode::schedule {

using AnySchedule = std::variant<MicroKernelSchedule, RowSchedule, AttentionSchedule>;

// Variant indices, in AnySchedule's order.
enum class Kind : uint8_t { Contraction, Row, Attention };
std::string_view to_string(Kind k);  // "contraction", "row", "attention"
inline Kind kind_of(const AnySchedule& s) {
  return static_cast<Kind>(s.index());
}
// The kind an operator's kernels are scheduled with.
Kind kind_of_operator(const ops::OperatorSpec& op);

Isa isa_of(const AnySchedule& s);
void set_isa(AnySchedule& s, Isa isa);
// The kind's digest (each kind tags its own, so kinds never collide).
uint64_t digest(const AnySchedule& s);
struct AnyScheduleHash {
  size_t operator()(const AnySchedule& s) const { return size_t(digest(s)); }
};
// A set of schedules of any kind (the tuner's candidates, windows, selections).
using AnyScheduleSet = std::unordered_set<AnySchedule, AnyScheduleHash>;

// For people: a line of the fields that matter ("4x16 tile, kc=256 mc=64 nc=256, ...")
// and a label a few characters long for plots ("4x16", "r4u2", "q16b32").
std::string describe(const AnySchedule& s);
std::string short_label(const AnySchedule& s);

nlohmann::json to_json(const AnySchedule& s);
// By the "kind" field (absent: a contraction's micro-kernel). Throws dietcode::Error.
AnySchedule any_schedule_from_json(const nlohmann::json& j);
std::string to_json_text(const AnySchedule& s);  // one line

// Checks the schedule against its operator (the kind's bind()); throws dietcode::Error
// when it does not fit, including a schedule of the wrong kind for the operator.
void check_binds(const AnySchedule& s, const te::Operator& op);

}  // namespace dietcode::schedule
