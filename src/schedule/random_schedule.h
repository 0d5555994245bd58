// Uniformly random valid micro-kernel schedules for an operator: the source of
// `dietcode verify` and of the code-generation tests. (The tuner's sampler, biased
// to what fits the hardware, is a different thing and lives with the tuner.)
#pragma once

#include <random>

#include "schedule/micro_kernel.h"
#include "te/tensor.h"

namespace dietcode::schedule {

// Draws until a schedule passes validate(s, op); throws dietcode::Error if the
// operator admits none (e.g. an N smaller than anything the ISA can tile).
MicroKernelSchedule random_schedule(std::mt19937_64& rng, Isa isa, const te::Operator& op);

}  // namespace dietcode::schedule
