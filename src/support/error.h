// Two error channels (see STYLE.md):
//  - dietcode::Error: a user error (bad shape, bad schedule, bad file, bad option).
//    Its message names the input and what was expected. Thrown to the caller.
//  - DC_INTERNAL_CHECK: an internal invariant; a failure is a bug in this project
//    and throws InternalError so tests fail loudly.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "dietcode/error.h"  // dietcode::Error, shared with the public API

namespace dietcode {

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

// Throws dietcode::Error with a formatted message.
template <typename... Args>
[[noreturn]] void user_error(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

[[noreturn]] void internal_error(const char* file, int line, const std::string& message);

}  // namespace dietcode

#define DC_INTERNAL_CHECK(cond, ...)                                                   \
  do {                                                                                 \
    if (!(cond))                                                                       \
      ::dietcode::internal_error(__FILE__, __LINE__,                                   \
                                 std::string("check failed: " #cond " ") __VA_OPT__(+) \
                                     __VA_OPT__(fmt::format(__VA_ARGS__)));            \
  } while (false)
