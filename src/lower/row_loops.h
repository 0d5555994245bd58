// build_row_loops: a row operator under a row schedule -> loops over row tasks and
// rows around one RowKernel (the per-row reductions and elementwise output).
#pragma once

#include "ir/stmt.h"
#include "ops/row_op.h"
#include "schedule/row_schedule.h"

namespace dietcode::lower {

// for task < ceil(rows / rows_per_task) [parallel]:
//   for r < min(rows_per_task, rows - task * rows_per_task):
//     let row = task * rows_per_task + r; let each row axis = its digit of row
//     row_kernel
ir::Stmt build_row_loops(const ops::RowOp& r, const schedule::RowSchedule& s);

}  // namespace dietcode::lower
