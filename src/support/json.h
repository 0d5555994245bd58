// Parsing JSON that may come from a hostile or broken file: nesting deeper than a
// limit is refused while parsing, because copying, comparing or printing a JSON value
// recurses once per level (nlohmann's do) and a deep enough file would overflow the
// stack. Nothing this project writes nests more than a few levels.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace dietcode {

constexpr int kMaxJsonDepth = 64;

struct ParsedJson {
  nlohmann::json value;  // discarded (is_discarded()) when not valid
  bool too_deep = false;
};

// Never throws: invalid or too-deep text gives a discarded value.
inline ParsedJson parse_json(const std::string& text) {
  ParsedJson out;
  out.value = nlohmann::json::parse(
      text,
      [&out](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
        if (depth > kMaxJsonDepth) out.too_deep = true;
        return !out.too_deep;
      },
      /*allow_exceptions=*/false);
  if (out.too_deep) out.value = nlohmann::json(nlohmann::json::value_t::discarded);
  return out;
}

}  // namespace dietcode
