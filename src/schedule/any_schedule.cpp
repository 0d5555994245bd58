#include "schedule/any_schedule.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ops/spec.h"
#include "support/error.h"

namespace dietcode::schedule {

std::string_view to_string(Kind k) {
  switch (k) {
    case Kind::Contraction:
      return "contraction";
    case Kind::Row:
      return "row";
    case Kind::Attention:
      return "attention";
  }
  return "?";
}

Kind kind_of_operator(const ops::OperatorSpec& op) {
  if (ops::is_row_operator(op.op)) return Kind::Row;
  if (op.op == "attention") return Kind::Attention;
  return Kind::Contraction;
}

Isa isa_of(const AnySchedule& s) {
  return std::visit([](const auto& x) { return x.isa; }, s);
}

void set_isa(AnySchedule& s, Isa isa) {
  std::visit([&](auto& x) { x.isa = isa; }, s);
}

uint64_t digest(const AnySchedule& s) {
  return std::visit([](const auto& x) { return x.digest(); }, s);
}

namespace {

struct Describe {
  std::string operator()(const MicroKernelSchedule& s) const {
    return fmt::format(
        "{}x{} tile{}, kc={} mc={} nc={}, order {}{}, parallel {}, A {}, B {}{}{}{}", s.mr, s.nr,
        s.vector_axis == Axis::K ? " of dot products" : "", s.kc, s.mc, s.nc,
        to_string(s.loop_order), s.batch_inner ? " (batch innermost)" : "", to_string(s.parallel),
        to_string(s.pack_a), to_string(s.pack_b),
        s.b_panel == schedule::BPanel::Tile ? " in tile panels" : "",
        s.prefetch_b > 0 ? fmt::format(" (prefetched {} k ahead)", s.prefetch_b) : "",
        s.prefetch_next ? fmt::format(" (next {}'s B prefetched)",
                                      s.inner_tile_loop == Axis::M ? "tile" : "block")
                        : "");
  }
  std::string operator()(const RowSchedule& s) const {
    return fmt::format("{} rows per task, unroll {}, {}, {} reduction passes", s.rows_per_task,
                       s.unroll, s.parallel ? "parallel" : "one thread", to_string(s.passes));
  }
  std::string operator()(const AttentionSchedule& s) const {
    return fmt::format("query tile {}, key block {}, unroll {}, parallel {}{}", s.query_tile,
                       s.key_block, s.unroll, to_string(s.parallel),
                       s.lanes == AttentionLanes::HeadDim ? ", head dimension in lanes" : "");
  }
};

struct ShortLabel {
  std::string operator()(const MicroKernelSchedule& s) const {
    return fmt::format("{}x{}{}", s.mr, s.nr, s.vector_axis == Axis::K ? "dot" : "");
  }
  std::string operator()(const RowSchedule& s) const {
    return fmt::format("r{}u{}", s.rows_per_task, s.unroll);
  }
  std::string operator()(const AttentionSchedule& s) const {
    return fmt::format("q{}b{}{}", s.query_tile, s.key_block,
                       s.lanes == AttentionLanes::HeadDim ? "d" : "");
  }
};

}  // namespace

std::string describe(const AnySchedule& s) {
  return std::visit(Describe{}, s);
}
std::string short_label(const AnySchedule& s) {
  return std::visit(ShortLabel{}, s);
}

nlohmann::json to_json(const AnySchedule& s) {
  return std::visit([](const auto& x) { return to_json(x); }, s);
}

AnySchedule any_schedule_from_json(const nlohmann::json& j) {
  if (j.is_object() && j.contains("kind")) {
    const nlohmann::json& kind = j["kind"];
    if (kind == "row") return row_schedule_from_json(j);
    if (kind == "attention") return attention_schedule_from_json(j);
    if (kind != "contraction")
      user_error("schedule: unknown kind {} (expected \"contraction\", \"row\" or \"attention\")",
                 kind.dump());
    nlohmann::json plain = j;
    plain.erase("kind");
    return schedule_from_json(plain);
  }
  return schedule_from_json(j);
}

std::string to_json_text(const AnySchedule& s) {
  return to_json(s).dump();
}

void check_binds(const AnySchedule& s, const te::Operator& op) {
  std::visit([&](const auto& x) { (void)bind(x, op); }, s);
}

}  // namespace dietcode::schedule
