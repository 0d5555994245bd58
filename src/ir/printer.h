// Human-readable text of expressions and loop IR, for logs, `dietcode show-ir` and tests.
#pragma once

#include <string>

#include "ir/expr.h"
#include "ir/stmt.h"

namespace dietcode::ir {

std::string to_string(const Expr& e);
std::string to_string(const Stmt& s);

}  // namespace dietcode::ir
