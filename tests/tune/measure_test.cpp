// Measurement in worker processes: a kernel that crashes, hangs or computes a wrong
// result is recorded as an error, and the rest of the batch is measured.
#include "tune/measure.h"

#include <gtest/gtest.h>

#include "codegen/llvm/target.h"
#include "test_support.h"
#include "tune/tuner.h"
#include "tune_support.h"

namespace dietcode::tune {
namespace {

ops::OperatorSpec small_dense() {
  return testing::small_dense_spec("bias_gelu");
}

MeasureOptions options() {
  MeasureOptions o;
  o.worker_path = DIETCODE_WORKER_PATH;
  o.workers = 2;
  o.compile_timeout = 60;
  o.measure_timeout = 3;  // the hanging kernel costs this much
  o.seconds_per_repeat = 0.001;
  o.side_by_side_seconds_per_repeat = 0.001;
  o.warmup_seconds = 0.001;
  o.repeats = 3;
  o.allow_faults = true;
  return o;
}

schedule::MicroKernelSchedule kernel(int64_t mr) {
  return testing::prepacked_kernel(mr);
}

TEST(Measure, FaultsAreErrorsAndTheBatchGoesOn) {
  Measurer m(small_dense(), options());
  std::vector<MeasureRequest> batch = {
      {kernel(1), {7}, ""},      {kernel(2), {13}, "crash"}, {kernel(3), {40}, ""},
      {kernel(4), {1}, "wrong"}, {kernel(5), {29}, "hang"},  {kernel(6), {17}, ""},
      {kernel(3), {11}, ""},
  };
  std::vector<size_t> order;
  std::vector<MeasureResult> r =
      m.measure(batch, [&](size_t i, const MeasureResult&) { order.push_back(i); });
  ASSERT_EQ(r.size(), batch.size());
  EXPECT_EQ(order.size(), batch.size());  // every result reported exactly once
  for (size_t i : {0, 2, 5, 6}) {
    EXPECT_TRUE(r[i].error.empty()) << i << ": " << r[i].error;
    EXPECT_GT(r[i].seconds, 0);
    EXPECT_GT(r[i].gflops, 0);
    EXPECT_LT(r[i].max_rel_err, 1e-5);
    EXPECT_GT(r[i].compile_seconds, 0);
  }
  EXPECT_NE(r[1].error.find("signal 6"), std::string::npos) << r[1].error;
  EXPECT_NE(r[3].error.find("wrong result"), std::string::npos) << r[3].error;
  EXPECT_NE(r[4].error.find("timed out"), std::string::npos) << r[4].error;
  // The measurer is still usable after its workers were killed.
  std::vector<MeasureResult> again = m.measure({{kernel(2), {5}, ""}});
  EXPECT_TRUE(again[0].error.empty()) << again[0].error;
}

TEST(Measure, AnInvalidScheduleIsAnErrorNotACrash) {
  Measurer m(small_dense(), options());
  schedule::MicroKernelSchedule bad = kernel(2);
  bad.mc = 3;  // not a multiple of mr
  std::vector<MeasureResult> r = m.measure({{bad, {5}, ""}, {kernel(2), {5}, ""}});
  EXPECT_NE(r[0].error.find("mc = 3"), std::string::npos) << r[0].error;
  EXPECT_TRUE(r[1].error.empty()) << r[1].error;
}

TEST(Measure, AMissingWorkerIsAClearError) {
  MeasureOptions o = options();
  o.worker_path = "/nonexistent/dietcode-worker";
  EXPECT_USER_ERROR(Measurer(small_dense(), o), "/nonexistent/dietcode-worker not found");
}

}  // namespace
}  // namespace dietcode::tune

namespace dietcode::tune {
namespace {

// With cold weights every call is timed after the constant inputs (here the pre-packed
// weights) are flushed; results stay checked and complete, alone and side by side, and
// the records of such a run are not those of a hot one.
TEST(Measure, ColdWeightsMeasureAloneAndSideBySide) {
  MeasureOptions o = options();
  o.cold_weights = true;
  Measurer m(small_dense(), o);
  std::vector<MeasureResult> r = m.measure({{kernel(2), {7}, ""}, {kernel(4), {33}, ""}});
  ASSERT_EQ(r.size(), 2u);
  for (const MeasureResult& x : r) {
    EXPECT_TRUE(x.error.empty()) << x.error;
    EXPECT_GT(x.seconds, 0);
    EXPECT_LT(x.max_rel_err, 1e-5);
  }
  std::vector<MeasureResult> set = m.measure_side_by_side({kernel(1), kernel(3)}, {19});
  ASSERT_EQ(set.size(), 2u);
  for (const MeasureResult& x : set) {
    EXPECT_TRUE(x.error.empty()) << x.error;
    EXPECT_GT(x.seconds, 0);
  }
  EXPECT_NE(workload_json(small_dense(), 1, true), workload_json(small_dense(), 1, false));
  EXPECT_EQ(workload_json(small_dense(), 1), workload_json(small_dense(), 1, false));
}

}  // namespace
}  // namespace dietcode::tune
