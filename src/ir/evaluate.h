// Evaluation of integer and boolean expressions at run time (buffer sizes,
// extents, schedule checks) from the values of the variables they mention.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "ir/expr.h"

namespace dietcode::ir {

using Bindings = std::unordered_map<const VarNode*, int64_t>;

// Throws InternalError if `e` mentions an unbound variable or a tensor.
int64_t evaluate_int(const Expr& e, const Bindings& bindings);

}  // namespace dietcode::ir
