// Parsing of small command-line values shared by the tools: integer lists and ranges, lists
// of names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dietcode {

// Parses "1,17,127", "1..128" or a mix ("1..4,9,16..18") into a sorted list of
// distinct positive integers. `what` names the option in error messages.
std::vector<int64_t> parse_int_list(const std::string& text, const std::string& what);

// Parses one positive integer; `what` names the option in error messages.
int64_t parse_positive_int(const std::string& text, const std::string& what);

// "openblas,onednn" -> {"openblas", "onednn"}; empty pieces kept ("a,,b" has three).
std::vector<std::string> split_names(const std::string& text);

}  // namespace dietcode
