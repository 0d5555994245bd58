// A fork-join thread pool for the parallel loops of generated code. The calling
// thread takes part in the work. Workers spin briefly after each loop before they
// sleep, because a kernel's parallel loops come back to back and a small call
// (M = 1) lasts tens of microseconds, less than waking a sleeping thread takes.
//
// One parallel region runs at a time: a region started while another is running
// (another thread calling a kernel, or a nested loop) runs on its caller alone,
// which is correct and never deadlocks.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace dietcode::runtime {

class ThreadPool {
 public:
  // How long an idle worker spins before it sleeps.
  static constexpr int64_t kSpinNanoseconds = 100'000;
  // A generated kernel's call with fewer operations than this runs its parallel loop on
  // the caller: ~1.3 us of one core's work, about where a second thread stops losing
  // to the round trip (2-vCPU VM, warm: attention's S V at T = 8, 98 K operations, took
  // 1.74 us alone and 1.57 with a second thread; LIBXSMM's 2-thread S V lost to its
  // 1-thread one up to T = 8 and won from T = 13, 260 K).
  static constexpr int64_t kSerialWork = int64_t{1} << 17;

  // The process-wide pool; starts with std::thread::hardware_concurrency() threads.
  static ThreadPool& global();

  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Total threads used by a parallel loop, the caller included (>= 1).
  void set_num_threads(int threads);
  int num_threads() const { return worker_count_.load(std::memory_order_relaxed) + 1; }

  // Runs body(begin, end, closure) over ranges that cover [0, n) exactly once: [0, n)
  // in one call when the caller runs alone, else one index per range, taken by whichever
  // thread is free (tasks of a loop differ in cost: edge tiles, k-blocks).
  using RangeBody = void (*)(int64_t begin, int64_t end, void* closure);
  void parallel_for(int64_t n, RangeBody body, void* closure);

  // The serial threshold of generated kernels' parallel loops (kSerialWork by default;
  // 0: every loop goes to the pool, as tests of the parallel paths want).
  void set_serial_work(int64_t operations) { serial_work_.store(operations); }
  int64_t serial_work() const { return serial_work_.load(std::memory_order_relaxed); }

  // Pins worker i to the i-th CPU this process may use (off by default). A worker
  // woken after sleeping is often placed on its waker's CPU, and both halves of a
  // parallel loop then share one core for milliseconds; pinned workers, with the
  // calling thread on the first CPU (pin_caller_thread), cannot collide.
  void set_pinning(bool pin);
  // Pins the calling thread to the first CPU this process may use. Threads it creates
  // later inherit that: pin only after other libraries have started their pools.
  static void pin_caller_thread();

 private:
  void worker_loop(uint64_t seen_generation);
  void run_tasks();
  void stop_workers();

  std::vector<std::thread> workers_;
  // workers_.size(), readable without the region lock: a loop on a pool without workers
  // runs on its caller without taking the lock (a call at T = 1 lasts ~200 ns).
  std::atomic<int> worker_count_{0};
  std::atomic<int64_t> serial_work_{kSerialWork};
  std::mutex region_mutex_;  // held for the duration of a parallel region
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  int sleeping_ = 0;  // guarded by sleep_mutex_
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
  bool pin_workers_ = false;
  // Workers join a region through its door: (generation << 17) | closed << 16 | joined.
  // The caller closes it once every task is taken and waits only for the workers that
  // joined (a worker still waking from sleep then costs the caller nothing; it finds the
  // door closed, or another region's, and touches nothing).
  static constexpr uint64_t kDoorClosed = uint64_t{1} << 16;
  static constexpr int kDoorGenerationShift = 17;
  std::atomic<uint64_t> door_{0};
  std::atomic<int> left_{0};  // workers that joined the current region and are done
  // The current region, published by the release store of door_.
  RangeBody body_ = nullptr;
  void* closure_ = nullptr;
  int64_t count_ = 0;
  std::atomic<int64_t> next_{0};
};

}  // namespace dietcode::runtime
