#include "schedule/attention_schedule.h"

#include <nlohmann/json.hpp>
#include <set>

#include "support/error.h"
#include "support/hash.h"
#include "support/json.h"

namespace dietcode::schedule {

using json = nlohmann::json;

std::string_view to_string(AttentionParallel p) {
  switch (p) {
    case AttentionParallel::None:
      return "none";
    case AttentionParallel::Heads:
      return "heads";
    case AttentionParallel::HeadsAndQueryTiles:
      return "heads_query_tiles";
  }
  return "?";
}

std::string_view to_string(AttentionLanes l) {
  return l == AttentionLanes::HeadDim ? "head_dim" : "queries";
}

uint64_t AttentionSchedule::digest() const {
  Fnv1a h;
  h.add("attention");
  for (int64_t v :
       {int64_t(target), int64_t(isa), query_tile, key_block, unroll, int64_t(parallel)})
    h.add(v);
  if (lanes != AttentionLanes::Queries) h.add(int64_t(lanes));  // earlier digests unchanged
  return h.value();
}

int64_t AttentionSchedule::row_vectors() const {
  if (lanes == AttentionLanes::HeadDim) return 1;
  int64_t w = vector_isa(isa).width;
  return (query_tile + w - 1) / w;
}

json to_json(const AttentionSchedule& s) {
  json j{{"kind", "attention"},
         {"target", to_string(s.target)},
         {"isa", to_string(s.isa)},
         {"query_tile", s.query_tile},
         {"key_block", s.key_block},
         {"unroll", s.unroll},
         {"parallel", to_string(s.parallel)}};
  if (s.lanes != AttentionLanes::Queries) j["lanes"] = to_string(s.lanes);
  return j;
}

std::string to_json_text(const AttentionSchedule& s) {
  return to_json(s).dump();
}

namespace {

const json& field(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) user_error("attention schedule JSON: missing field '{}'", name);
  return *it;
}

std::string string_field(const json& j, const char* name) {
  const json& v = field(j, name);
  if (!v.is_string())
    user_error("attention schedule JSON: field '{}' is {}, expected a string", name, v.dump());
  return v.get<std::string>();
}

int64_t int_field(const json& j, const char* name) {
  const json& v = field(j, name);
  if (!v.is_number_integer())
    user_error("attention schedule JSON: field '{}' is {}, expected an integer", name, v.dump());
  return v.get<int64_t>();
}

}  // namespace

AttentionSchedule attention_schedule_from_json(const json& j) {
  if (!j.is_object()) user_error("attention schedule JSON: expected an object, got {}", j.dump());
  static const std::set<std::string> known{"kind",      "target", "isa",      "query_tile",
                                           "key_block", "unroll", "parallel", "lanes"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known.count(it.key())) user_error("attention schedule JSON: unknown field '{}'", it.key());
  if (string_field(j, "kind") != "attention")
    user_error("attention schedule JSON: kind '{}' is not 'attention'", string_field(j, "kind"));
  AttentionSchedule s;
  if (string_field(j, "target") != "cpu")
    user_error("attention schedule JSON: target '{}' is not supported; expected cpu",
               string_field(j, "target"));
  s.isa = parse_isa(string_field(j, "isa"));
  s.query_tile = int_field(j, "query_tile");
  s.key_block = int_field(j, "key_block");
  s.unroll = int_field(j, "unroll");
  std::string par = string_field(j, "parallel");
  if (par == "none")
    s.parallel = AttentionParallel::None;
  else if (par == "heads")
    s.parallel = AttentionParallel::Heads;
  else if (par == "heads_query_tiles")
    s.parallel = AttentionParallel::HeadsAndQueryTiles;
  else
    user_error("attention schedule JSON: parallel '{}'; expected none, heads or heads_query_tiles",
               par);
  if (j.contains("lanes")) {
    std::string lanes = string_field(j, "lanes");
    if (lanes == "head_dim")
      s.lanes = AttentionLanes::HeadDim;
    else if (lanes != "queries")
      user_error("attention schedule JSON: lanes '{}'; expected queries or head_dim", lanes);
  }
  validate(s);
  return s;
}

AttentionSchedule attention_schedule_from_json_text(const std::string& text) {
  ParsedJson parsed = parse_json(text);
  if (parsed.value.is_discarded())
    user_error("attention schedule JSON: not valid JSON{}: {}",
               parsed.too_deep ? " (nested too deeply)" : "", text);
  return attention_schedule_from_json(parsed.value);
}

void validate(const AttentionSchedule& s) {
  if (s.query_tile < 1 || s.query_tile > 64)
    user_error("attention schedule: query_tile = {}; expected 1..64", s.query_tile);
  if (s.key_block < 1 || s.key_block > 256)
    user_error("attention schedule: key_block = {}; expected 1..256", s.key_block);
  if (s.unroll < 1 || s.unroll > 8)
    user_error("attention schedule: unroll = {}; expected 1..8", s.unroll);
  if (s.lanes == AttentionLanes::HeadDim && s.unroll > kMaxHeadDimUnroll)
    user_error("attention schedule: unroll = {} with lanes head_dim; expected 1..{}", s.unroll,
               kMaxHeadDimUnroll);
  const VectorIsa& v = vector_isa(s.isa);
  if ((s.unroll + 1) * s.row_vectors() > v.registers)
    user_error(
        "attention schedule: unroll {} x {} vectors of query rows (query_tile {}) and a row of "
        "Q^T need {} vector registers; {} has {}",
        s.unroll, s.row_vectors(), s.query_tile, (s.unroll + 1) * s.row_vectors(), v.name,
        v.registers);
}

BoundAttentionSchedule bind(const AttentionSchedule& s, const te::Operator& op) {
  validate(s);
  return BoundAttentionSchedule(s, op, ops::match_attention(op));
}

std::vector<AttentionSchedule> attention_schedule_grid(
    Isa isa, const std::vector<AttentionParallel>& parallel,
    const std::vector<int64_t>& query_tiles, const std::vector<int64_t>& key_blocks,
    const std::vector<int64_t>& unrolls, AttentionLanes lanes) {
  std::vector<AttentionSchedule> grid;
  for (AttentionParallel p : parallel)
    for (int64_t tile : query_tiles)
      for (int64_t block : key_blocks)
        for (int64_t unroll : unrolls) {
          AttentionSchedule s;
          s.isa = isa;
          s.query_tile = tile;
          s.key_block = block;
          s.unroll = unroll;
          s.parallel = p;
          s.lanes = lanes;
          try {
            validate(s);
          } catch (const Error&) {
            continue;  // more accumulators than the ISA has registers
          }
          grid.push_back(s);
        }
  return grid;
}

}  // namespace dietcode::schedule
