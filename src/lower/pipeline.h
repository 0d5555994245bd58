// Lowering: operator + micro-kernel schedule -> loop IR ready for code generation.
// A straight line of named passes (pipeline.cpp); each can be logged.
//
//   reference_loops   the unscheduled program (printed for reading only)
//   build_loop_nest   block and tile loops, pack markers, the micro-kernel
//   mark_parallel     the schedule's parallel block loop
//   insert_packing    zero-padded panel copies and their allocations
//   simplify          index arithmetic
#pragma once

#include <functional>
#include <string>

#include "ir/stmt.h"
#include "schedule/any_schedule.h"
#include "te/tensor.h"

namespace dietcode::lower {

// A lowered program and its calling convention: arguments are the shape variables'
// values in `shape_vars` order and one pointer per entry of `buffers`.
struct LoweredFunc {
  std::string name;
  std::vector<ir::Var> shape_vars;
  std::vector<ir::Buffer> buffers;
  ir::Stmt body;
  // Operations of one call (2 per multiply-add; a row operator: ~2 per element and pass
  // over its rows), in terms of shape_vars; what a parallel
  // loop weighs against a thread-pool round trip (undefined: always handed to the pool).
  ir::Expr work;
};

struct LoweredKernel {
  LoweredFunc compute;  // buffers: the operator's inputs, then its output
  bool prepacked_b = false;
  int prepacked_input = -1;  // which input `compute` reads in packed form
  LoweredFunc prepack;       // buffers: {B, B_packed}
  ir::Expr packed_b_size;    // elements of B_packed
};

// Identifies the layout a kernel's pre-packing program writes (a hash of that program),
// 0 for a kernel that reads its inputs as given. Kernels with the same id accept each
// other's packed buffers: a module keeps one packed copy of its weights per id.
uint64_t packed_layout_id(const LoweredKernel& k);

// The operator's compute function around `body`: its shape variables, then its inputs
// and its output as buffers (the calling convention of every lowered kernel).
LoweredFunc compute_function(const te::Operator& op, ir::Stmt body);

// Called with (pass name, IR after it).
using PassLogger = std::function<void(const std::string&, const std::string&)>;

// Lowers a schedule already checked against its operator (schedule::bind).
LoweredKernel lower(const schedule::BoundSchedule& bound, const PassLogger& log = nullptr);

// Lowers a row operator under its row schedule (row_loops.h):
//   reference_loops   the unscheduled program (printed for reading only)
//   build_row_loops   row tasks, rows, the row kernel
//   simplify          index arithmetic
LoweredKernel lower(const schedule::BoundRowSchedule& bound, const PassLogger& log = nullptr);

// Lowers fused attention under its attention schedule (attention_loops.h):
//   reference_loops        the unscheduled program (printed for reading only)
//   build_attention_loops  slices, query tiles (parallel per the schedule), the kernel
//   simplify               index arithmetic
LoweredKernel lower(const schedule::BoundAttentionSchedule& bound, const PassLogger& log = nullptr);

// A schedule of any kind: bound to its operator (throws dietcode::Error when it does not
// fit), then lowered as above.
LoweredKernel lower(const te::Operator& op, const schedule::AnySchedule& s,
                    const PassLogger& log = nullptr);

}  // namespace dietcode::lower
