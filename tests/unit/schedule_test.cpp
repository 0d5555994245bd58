// Unit tests of micro-kernel schedules: JSON round trip and validation.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "ops/batch_matmul.h"
#include "ops/dense.h"
#include "schedule/micro_kernel.h"
#include "schedule/random_schedule.h"
#include "test_support.h"

using namespace dietcode;
using schedule::MicroKernelSchedule;

namespace {

MicroKernelSchedule good() {
  MicroKernelSchedule s = dietcode::testing::make_schedule("avx2", 6, 16, 256, 60, 512);
  s.parallel = "n";
  s.pack_b = schedule::PackB::Prepacked;
  return s;
}

}  // namespace

TEST(Schedule, JsonRoundTrip) {
  MicroKernelSchedule s = good();
  EXPECT_EQ(schedule::schedule_from_json_text(schedule::to_json_text(s)), s);
  std::mt19937_64 rng(3);
  te::Operator op = ops::dense(1, 128, 768, 768);
  for (int i = 0; i < 50; ++i) {
    MicroKernelSchedule r = schedule::random_schedule(rng, "avx512", op);
    EXPECT_EQ(schedule::schedule_from_json(schedule::to_json(r)), r);
  }
}

TEST(Schedule, RandomSchedulesAreValid) {
  std::mt19937_64 rng(5);
  te::ShapeVar t = te::shape_var("T", 1, 128);
  te::Operator op = ops::batch_matmul({t}, 12, t.var, 64, 64, ops::Layout::NN);
  for (int i = 0; i < 100; ++i)
    EXPECT_NO_THROW(schedule::validate(schedule::random_schedule(rng, "avx2", op), op));
}

TEST(Schedule, ValidScheduleIsAccepted) {
  EXPECT_NO_THROW(schedule::validate(good(), ops::dense(1, 128, 2304, 768)));
}

TEST(Schedule, RejectsTooManyVectorRegisters) {
  MicroKernelSchedule s = good();
  s.mr = 8;  // 8 x 2 accumulators + 2 + 1 = 19 > 16 on AVX2
  s.mc = 64;
  EXPECT_USER_ERROR(schedule::validate(s), "needs 19 vector registers");
  s.isa = "avx512";  // 32 registers, but nr must then be a multiple of 16: it is
  EXPECT_NO_THROW(schedule::validate(s));
}

TEST(Schedule, RejectsNrOffVectorWidth) {
  MicroKernelSchedule s = good();
  s.nr = 12;
  EXPECT_USER_ERROR(schedule::validate(s), "multiple of the avx2 vector width 8");
}

TEST(Schedule, RejectsUnknownAxesAndBadOrders) {
  MicroKernelSchedule s = good();
  s.loop_order = {"n", "q", "m"};
  EXPECT_USER_ERROR(schedule::validate(s), "unknown axis 'q'");
  s.loop_order = {"n", "n", "m"};
  EXPECT_USER_ERROR(schedule::validate(s), "exactly once");
  s = good();
  s.parallel = "k";
  EXPECT_USER_ERROR(schedule::validate(s), "reduction");
  s.parallel = "z";
  EXPECT_USER_ERROR(schedule::validate(s), "unknown parallel axis 'z'");
}

TEST(Schedule, RejectsBlocksThatAreNotTileMultiples) {
  MicroKernelSchedule s = good();
  s.mc = 61;
  EXPECT_USER_ERROR(schedule::validate(s), "mc = 61 must be a positive multiple of mr = 6");
  s = good();
  s.nc = 24;
  EXPECT_USER_ERROR(schedule::validate(s), "nc = 24 must be a positive multiple of nr = 16");
}

TEST(Schedule, RejectsTilesLargerThanAnyAllowedExtent) {
  MicroKernelSchedule s = good();
  EXPECT_USER_ERROR(schedule::validate(s, ops::dense(1, 4, 2304, 768)),
                    "mr = 6 is larger than any allowed M");
  EXPECT_USER_ERROR(schedule::validate(s, ops::dense(1, 128, 8, 768)),
                    "nr = 16 is larger than any allowed N");
  EXPECT_USER_ERROR(schedule::validate(s, ops::dense(1, 128, 2304, 100)),
                    "kc = 256 is larger than any allowed K");
}

TEST(Schedule, RejectsPrepackingAnInputThatChangesPerCall) {
  MicroKernelSchedule s = good();
  s.nc = 64;
  te::ShapeVar t = te::shape_var("T", 1, 128);
  te::Operator op = ops::batch_matmul({t}, 12, t.var, 64, 256, ops::Layout::NT);
  EXPECT_USER_ERROR(schedule::validate(s, op), "needs a constant B");
  s.parallel = "batch";
  s.pack_b = schedule::PackB::PerBlock;
  EXPECT_NO_THROW(schedule::validate(s, op));
}

TEST(Schedule, JsonErrorsNameTheField) {
  EXPECT_USER_ERROR(schedule::schedule_from_json_text("{\"mr\": 4"), "syntax error");
  nlohmann::json j = schedule::to_json(good());
  j["tile"] = 3;
  EXPECT_USER_ERROR(schedule::schedule_from_json(j), "unknown field 'tile'");
  j = schedule::to_json(good());
  j.erase("kc");
  EXPECT_USER_ERROR(schedule::schedule_from_json(j), "missing field 'kc'");
  j = schedule::to_json(good());
  j["mr"] = "six";
  EXPECT_USER_ERROR(schedule::schedule_from_json(j), "field 'mr' is \"six\", expected an integer");
  j = schedule::to_json(good());
  j["isa"] = "sse2";
  EXPECT_USER_ERROR(schedule::validate(schedule::schedule_from_json(j)),
                    "unknown vector ISA 'sse2'");
  j = schedule::to_json(good());
  j["target"] = "cuda";
  EXPECT_USER_ERROR(schedule::schedule_from_json(j), "target 'cuda' is not supported");
}
