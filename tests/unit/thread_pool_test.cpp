// The runtime's thread pool: every task runs exactly once, whatever the timing.
#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "runtime/abi.h"

using dietcode::runtime::ThreadPool;

namespace {

void count_task(int64_t begin, int64_t end, void* closure) {
  auto* hits = static_cast<std::vector<std::atomic<int>>*>(closure);
  for (int64_t i = begin; i < end; ++i) (*hits)[i].fetch_add(1);
}

void expect_each_once(ThreadPool& pool, int64_t n) {
  std::vector<std::atomic<int>> hits(n);
  pool.parallel_for(n, count_task, &hits);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "task " << i;
}

}  // namespace

TEST(ThreadPool, RegionRightAfterStartIsNotMissed) {
  // A region published before a new worker first runs must still be picked up.
  for (int i = 0; i < 200; ++i) {
    ThreadPool pool(3);
    expect_each_once(pool, 7);
  }
}

TEST(ThreadPool, RegionsBackToBackAndAfterSleeping) {
  ThreadPool pool(2);
  for (int i = 0; i < 1000; ++i) expect_each_once(pool, 1 + i % 9);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // workers go to sleep
  for (int i = 0; i < 10; ++i) expect_each_once(pool, 16);
}

TEST(ThreadPool, WorkersWakingLateTouchNoRegionTheyDidNotJoin) {
  // The caller does not wait for sleeping workers: short regions right after the workers
  // fell asleep end before the workers are up, and the next regions start while those
  // workers are still finding their way in.
  ThreadPool pool(3);
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(300 + 50 * i));  // past the spin
    for (int r = 0; r < 50; ++r) expect_each_once(pool, 1 + r % 4);
  }
}

TEST(ThreadPool, ConcurrentCallersEachGetAllTheirTasks) {
  ThreadPool pool(2);
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int i = 0; i < 300; ++i) expect_each_once(pool, 5);
    });
  for (std::thread& t : callers) t.join();
}

TEST(ThreadPool, ResizingKeepsWorking) {
  ThreadPool pool(1);
  for (int threads : {1, 2, 4, 2, 1}) {
    pool.set_num_threads(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    expect_each_once(pool, 33);
  }
}

namespace {

struct Ranges {
  std::atomic<int> calls{0};
  std::atomic<int64_t> covered{0};
};

void record_range(int64_t begin, int64_t end, void* closure) {
  auto* r = static_cast<Ranges*>(closure);
  r->calls.fetch_add(1);
  r->covered.fetch_add(end - begin);
}

}  // namespace

TEST(ThreadPool, GeneratedLoopsBelowTheSerialThresholdRunOnTheirCaller) {
  // Generated code passes the call's operations: a call too small to pay a round trip
  // through the pool runs its loop as one range; a large or unknown one, one index each.
  ThreadPool& pool = ThreadPool::global();
  int threads = pool.num_threads();
  pool.set_num_threads(2);
  const int64_t threshold = pool.serial_work();
  EXPECT_EQ(threshold, ThreadPool::kSerialWork);
  for (int64_t work : {int64_t{0}, threshold - 1, threshold, int64_t{-1}}) {
    Ranges r;
    dietcode_parallel_for(12, record_range, &r, work);
    EXPECT_EQ(r.covered.load(), 12);
    EXPECT_EQ(r.calls.load(), work >= 0 && work < threshold ? 1 : 12) << "work " << work;
  }
  pool.set_serial_work(0);  // every loop to the pool, as the parallel-path tests want
  Ranges r;
  dietcode_parallel_for(12, record_range, &r, 100);
  EXPECT_EQ(r.calls.load(), 12);
  pool.set_serial_work(threshold);
  pool.set_num_threads(threads);
}
