#include "schedule/row_schedule.h"

#include <nlohmann/json.hpp>
#include <set>

#include "support/error.h"
#include "support/hash.h"
#include "support/json.h"

namespace dietcode::schedule {

using json = nlohmann::json;

std::string_view to_string(ReductionPasses p) {
  return p == ReductionPasses::Fused ? "fused" : "separate";
}

uint64_t RowSchedule::digest() const {
  Fnv1a h;
  h.add("row");
  for (int64_t v :
       {int64_t(target), int64_t(isa), rows_per_task, unroll, int64_t(parallel), int64_t(passes)})
    h.add(v);
  if (interleave != 1) h.add(interleave);  // digests of schedules without it are unchanged
  return h.value();
}

json to_json(const RowSchedule& s) {
  return json{{"kind", "row"},
              {"target", to_string(s.target)},
              {"isa", to_string(s.isa)},
              {"rows_per_task", s.rows_per_task},
              {"unroll", s.unroll},
              {"parallel", s.parallel},
              {"passes", to_string(s.passes)},
              {"interleave", s.interleave}};
}

std::string to_json_text(const RowSchedule& s) {
  return to_json(s).dump();
}

namespace {

const json& field(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) user_error("row schedule JSON: missing field '{}'", name);
  return *it;
}

std::string string_field(const json& j, const char* name) {
  const json& v = field(j, name);
  if (!v.is_string())
    user_error("row schedule JSON: field '{}' is {}, expected a string", name, v.dump());
  return v.get<std::string>();
}

int64_t int_field(const json& j, const char* name) {
  const json& v = field(j, name);
  if (!v.is_number_integer())
    user_error("row schedule JSON: field '{}' is {}, expected an integer", name, v.dump());
  return v.get<int64_t>();
}

}  // namespace

RowSchedule row_schedule_from_json(const json& j) {
  if (!j.is_object()) user_error("row schedule JSON: expected an object, got {}", j.dump());
  static const std::set<std::string> known{"kind",   "target",   "isa",    "rows_per_task",
                                           "unroll", "parallel", "passes", "interleave"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known.count(it.key())) user_error("row schedule JSON: unknown field '{}'", it.key());
  if (string_field(j, "kind") != "row")
    user_error("row schedule JSON: kind '{}' is not 'row'", string_field(j, "kind"));
  RowSchedule s;
  if (string_field(j, "target") != "cpu")
    user_error("row schedule JSON: target '{}' is not supported; expected cpu",
               string_field(j, "target"));
  s.isa = parse_isa(string_field(j, "isa"));
  s.rows_per_task = int_field(j, "rows_per_task");
  s.unroll = int_field(j, "unroll");
  const json& par = field(j, "parallel");
  if (!par.is_boolean())
    user_error("row schedule JSON: field 'parallel' is {}, expected true or false", par.dump());
  s.parallel = par.get<bool>();
  std::string passes = string_field(j, "passes");
  if (passes != "fused" && passes != "separate")
    user_error("row schedule JSON: passes '{}'; expected fused or separate", passes);
  s.passes = passes == "fused" ? ReductionPasses::Fused : ReductionPasses::Separate;
  if (j.contains("interleave")) s.interleave = int_field(j, "interleave");
  validate(s);
  return s;
}

RowSchedule row_schedule_from_json_text(const std::string& text) {
  ParsedJson parsed = parse_json(text);
  if (parsed.value.is_discarded())
    user_error("row schedule JSON: not valid JSON{}: {}",
               parsed.too_deep ? " (nested too deeply)" : "", text);
  return row_schedule_from_json(parsed.value);
}

void validate(const RowSchedule& s) {
  if (s.rows_per_task < 1 || s.rows_per_task > 4096)
    user_error("row schedule: rows_per_task = {}; expected 1..4096", s.rows_per_task);
  if (s.unroll < 1 || s.unroll > 8)
    user_error("row schedule: unroll = {}; expected 1..8", s.unroll);
  if (s.interleave < 1 || s.interleave > 8)
    user_error("row schedule: interleave = {}; expected 1..8", s.interleave);
}

BoundRowSchedule bind(const RowSchedule& s, const te::Operator& op) {
  validate(s);
  return BoundRowSchedule(s, op, ops::match_row_op(op));
}

}  // namespace dietcode::schedule
