// The modest grids of micro-kernels (and of row schedules) that `dietcode bench --sweep` tries on
// every shape, keeping the fastest per shape: the "oracle" upper bound that tuning is judged
// against.
#pragma once

#include <vector>

#include "schedule/attention_schedule.h"
#include "schedule/micro_kernel.h"
#include "schedule/row_schedule.h"
#include "te/tensor.h"

namespace dietcode::bench {

// Register tiles that fill the ISA's vector registers, each with a few block and
// parallelization choices sized for `threads`; only schedules valid for `op` are kept.
// `cold_weights` (constant weights met in memory, not in cache): each choice also with
// software prefetch of B, as the tuner's cold search has it.
std::vector<schedule::MicroKernelSchedule> sweep_grid(const te::Operator& op, schedule::Isa isa,
                                                      int threads, bool cold_weights = false);

// The row schedules tried on a row operator's every shape: unroll 1, 2, 4 (independent
// accumulators) x 1, 4, 16, 64 rows per task; parallel tasks with more than one thread.
std::vector<schedule::RowSchedule> row_sweep_grid(schedule::Isa isa, int threads);

// The attention schedules tried on fused attention's every shape: query tiles 1, 8, 16,
// 24, 32 x key blocks 8, 32, 64, 128 x unroll 1, 2, 4, 8 (those whose registers fit the
// ISA), and with the head dimension in the lanes query tiles 4, 16 x key blocks 64, 128 x
// unroll 1, 2; one thread: no parallel loop; more: tasks over heads, and over heads and
// query tiles.
std::vector<schedule::AttentionSchedule> attention_sweep_grid(schedule::Isa isa, int threads);

}  // namespace dietcode::bench
