// Pass 2: turns the schedule's parallel block loop into a parallel loop (one task
// per block), fused with the batch loops around it (one task per batch entry and
// block). Code generation outlines its body and hands it to the runtime's thread pool.
#pragma once

#include <vector>

#include "ir/stmt.h"

namespace dietcode::lower {

ir::Stmt mark_parallel(const ir::Stmt& s, const ir::Var& loop_var,
                       const std::vector<ir::Var>& batch_axes);

}  // namespace dietcode::lower
