// Schedules for tests, without GoogleTest (the export tests' module generator uses it).
#pragma once

#include <string>

#include "schedule/micro_kernel.h"

namespace dietcode::testing {

// A schedule with the given tile and blocks; the other fields keep their defaults.
inline schedule::MicroKernelSchedule make_schedule(schedule::Isa isa, int64_t mr, int64_t nr,
                                                   int64_t kc, int64_t mc, int64_t nc) {
  schedule::MicroKernelSchedule s;
  s.isa = isa;
  s.mr = mr;
  s.nr = nr;
  s.kc = kc;
  s.mc = mc;
  s.nc = nc;
  return s;
}

}  // namespace dietcode::testing
