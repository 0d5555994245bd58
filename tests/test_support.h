// Small helpers shared by the test groups.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "schedule/micro_kernel.h"
#include "support/error.h"

// Expects `statement` to throw dietcode::Error whose message contains `fragment`.
#define EXPECT_USER_ERROR(statement, fragment)                                         \
  do {                                                                                 \
    try {                                                                              \
      statement;                                                                       \
      ADD_FAILURE() << "expected a dietcode::Error mentioning '" << (fragment) << "'"; \
    } catch (const dietcode::Error& e) {                                               \
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)               \
          << "message: " << e.what();                                                  \
    }                                                                                  \
  } while (false)

namespace dietcode::testing {

// A schedule with the given tile and blocks; the other fields keep their defaults.
inline schedule::MicroKernelSchedule make_schedule(const std::string& isa, int64_t mr, int64_t nr,
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
