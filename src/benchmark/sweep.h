// The modest grid of micro-kernels that `dietcode bench --sweep` tries on every shape,
// keeping the fastest per shape: the "oracle" upper bound that tuning is judged against.
#pragma once

#include <vector>

#include "schedule/micro_kernel.h"
#include "te/tensor.h"

namespace dietcode::bench {

// Register tiles that fill the ISA's vector registers, each with a few block and
// parallelization choices sized for `threads`; only schedules valid for `op` are kept.
std::vector<schedule::MicroKernelSchedule> sweep_grid(const te::Operator& op,
                                                      schedule::Isa isa, int threads);

}  // namespace dietcode::bench
