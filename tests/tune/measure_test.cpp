// Measurement in worker processes: a kernel that crashes, hangs or computes a wrong
// result is recorded as an error, and the rest of the batch is measured.
#include "tune/measure.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

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

namespace dietcode::tune {
namespace {

// The workers' object cache is a temporary directory named after the tuning process; one
// left by a process that was killed (its destructor never ran) is removed by the next
// Measurer, once untouched for an hour. Those of live processes and fresh ones stay.
class ObjectCacheDirTest : public testing::ScratchDirTest {
 protected:
  void SetUp() override {
    ScratchDirTest::SetUp();
    const char* old = std::getenv("TMPDIR");
    if (old) old_tmpdir_ = old;
    ::setenv("TMPDIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    if (old_tmpdir_)
      ::setenv("TMPDIR", old_tmpdir_->c_str(), 1);
    else
      ::unsetenv("TMPDIR");
    ScratchDirTest::TearDown();
  }
  // A directory as a process `pid` would have left it, with one object, last written
  // `age` ago.
  std::filesystem::path left_by(pid_t pid, const std::string& tail, std::chrono::minutes age) {
    const std::filesystem::path d = dir_ / fmt::format("dietcode-objects-{}-{}", pid, tail);
    std::filesystem::create_directories(d);
    std::FILE* f = std::fopen((d / "dc0123.o").c_str(), "w");
    std::fclose(f);
    std::filesystem::last_write_time(d, std::filesystem::file_time_type::clock::now() - age);
    return d;
  }
  std::optional<std::string> old_tmpdir_;
};

// The number of a process that has exited and been reaped.
pid_t gone_process() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

TEST_F(ObjectCacheDirTest, ThoseOfKilledProcessesAreRemovedByTheNextMeasurer) {
  using std::chrono::minutes;
  const pid_t gone = gone_process();
  const auto orphan = left_by(gone, "aaaaaa", minutes(120));
  const auto recent = left_by(gone, "bbbbbb", minutes(5));         // may still be in use
  const auto alive = left_by(::getpid(), "cccccc", minutes(120));  // a live process's
  const auto unnumbered = dir_ / "dietcode-objects-dddddd";        // not named by a PID
  std::filesystem::create_directories(unnumbered);
  std::filesystem::last_write_time(unnumbered,
                                   std::filesystem::file_time_type::clock::now() - minutes(120));
  auto ours = [&] {
    std::vector<std::filesystem::path> found;
    for (const auto& e : std::filesystem::directory_iterator(dir_))
      if (e.path().filename().string().rfind(fmt::format("dietcode-objects-{}-", ::getpid()), 0) ==
              0 &&
          e.path() != alive)
        found.push_back(e.path());
    return found;
  };
  {
    Measurer m(small_dense(), options());
    EXPECT_FALSE(std::filesystem::exists(orphan));
    EXPECT_TRUE(std::filesystem::exists(recent));
    EXPECT_TRUE(std::filesystem::exists(alive));
    EXPECT_TRUE(std::filesystem::exists(unnumbered));
    // Its own cache, named after this process, is used by the workers.
    EXPECT_EQ(ours().size(), 1u);
    std::vector<MeasureResult> r = m.measure({{kernel(2), {7}, ""}});
    EXPECT_TRUE(r[0].error.empty()) << r[0].error;
    ASSERT_EQ(ours().size(), 1u);
    EXPECT_FALSE(std::filesystem::is_empty(ours()[0]));
  }
  EXPECT_TRUE(ours().empty());  // removed with the Measurer
}

}  // namespace
}  // namespace dietcode::tune
