// Pass 1: the blocked loop nest of a contraction under a micro-kernel schedule.
// Block loops (n by nc, k by kc, m by mc) in the schedule's order, PackStage markers
// where each packed operand's block becomes known, NR x MR tile loops, and a
// MicroKernel at the bottom. All extents stay symbolic.
#pragma once

#include "ir/stmt.h"
#include "ops/contraction.h"
#include "schedule/micro_kernel.h"

namespace dietcode::lower {

struct LoopNest {
  ir::Stmt body;
  ir::Var n_block, k_block, m_block;  // the block loop variables (for mark_parallel)
  ir::Buffer packed_b;                // the pre-packed B buffer (prepacked schedules)
  ir::Expr packed_b_size;             // its element count
  ir::Stmt prepack;                   // the program that fills packed_b from B
};

LoopNest build_loop_nest(const ops::Contraction& c, const schedule::MicroKernelSchedule& s);

}  // namespace dietcode::lower
