// The error a DietCode call throws for bad input: a wrong buffer size, a null or
// misaligned pointer, a malformed or foreign module file. The message names the input
// and what was expected.
#pragma once

#include <stdexcept>
#include <string>

namespace dietcode {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace dietcode
