// The unscheduled program: one loop per output axis and the compute definition,
// reduction and all, in the innermost statement. Printed as the first stage of
// the lowering log so that every later stage can be read against it.
#pragma once

#include "ir/stmt.h"
#include "te/tensor.h"

namespace dietcode::lower {

ir::Stmt reference_loops(const te::Operator& op);

}  // namespace dietcode::lower
