#include "support/parse.h"

#include <algorithm>
#include <charconv>

#include "support/error.h"

namespace dietcode {

namespace {

int64_t parse_int(const std::string& text, const std::string& what, const std::string& whole) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end)
    user_error("{}: '{}' is not an integer (in '{}'); expected e.g. '1,17,127' or '1..128'", what,
               text, whole);
  if (value <= 0) user_error("{}: {} is not positive; extents must be >= 1", what, value);
  return value;
}

}  // namespace

int64_t parse_positive_int(const std::string& text, const std::string& what) {
  return parse_int(text, what, text);
}

std::vector<int64_t> parse_int_list(const std::string& text, const std::string& what) {
  std::vector<int64_t> values;
  if (text.empty()) user_error("{}: empty list; expected e.g. '1,17,127' or '1..128'", what);
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t dots = item.find("..");
    if (dots == std::string::npos) {
      values.push_back(parse_int(item, what, text));
    } else {
      int64_t lo = parse_int(item.substr(0, dots), what, text);
      int64_t hi = parse_int(item.substr(dots + 2), what, text);
      if (hi < lo)
        user_error("{}: range '{}' is empty (upper bound below lower bound)", what, item);
      if (hi - lo > 1'000'000) user_error("{}: range '{}' has more than 10^6 values", what, item);
      for (int64_t v = lo; v <= hi; ++v) values.push_back(v);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    names.push_back(
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return names;
}

}  // namespace dietcode
