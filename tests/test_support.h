// Small helpers shared by the test groups.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "schedule/micro_kernel.h"
#include "schedule_support.h"
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
