// wait_for_idle_threads (benchmark/harness.h): the bench waits for other threads' busy
// waiting to end before it times the next implementation.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "benchmark/harness.h"

namespace dietcode::bench {
namespace {

TEST(IdleThreads, QuietWhenNoOtherThreadRuns) {
  IdleWait w = wait_for_idle_threads(0, 2.0);
  EXPECT_TRUE(w.quiet);
  EXPECT_LT(w.seconds, 1.0);
}

TEST(IdleThreads, WaitsAtLeastTheMinimum) {
  IdleWait w = wait_for_idle_threads(0.05, 2.0);
  EXPECT_TRUE(w.quiet);
  EXPECT_GE(w.seconds, 0.05);
}

// A busy-waiting worker, as a BLAS pool's after a call, is not idle.
TEST(IdleThreads, BusyWhileAnotherThreadSpins) {
  std::atomic<bool> stop{false};
  std::thread spinner([&] {
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  IdleWait w = wait_for_idle_threads(0, 0.1);
  stop = true;
  spinner.join();
  EXPECT_FALSE(w.quiet);
  EXPECT_GE(w.seconds, 0.1);
  // Once it has stopped, the process is quiet again.
  EXPECT_TRUE(wait_for_idle_threads(0, 2.0).quiet);
}

}  // namespace
}  // namespace dietcode::bench
