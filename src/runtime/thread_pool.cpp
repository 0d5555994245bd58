#include "runtime/thread_pool.h"

#include <immintrin.h>
#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "runtime/abi.h"

namespace dietcode::runtime {

namespace {

// The CPUs this process may run on, as they were when the pool was first used (before
// any pinning narrowed the calling thread's own mask).
const std::vector<int>& allowed_cpus() {
  static const std::vector<int> cpus = [] {
    std::vector<int> v;
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &allowed)) v.push_back(c);
    return v;
  }();
  return cpus;
}

void pin_to_cpu(pthread_t thread, int index) {
  const std::vector<int>& cpus = allowed_cpus();
  if (cpus.size() < 2) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpus[index % cpus.size()], &one);
  pthread_setaffinity_np(thread, sizeof one, &one);  // best effort
}

}  // namespace

ThreadPool& ThreadPool::global() {
  allowed_cpus();  // record the process's CPUs before anyone pins a thread
  static ThreadPool pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return pool;
}

void ThreadPool::pin_caller_thread() {
  pin_to_cpu(pthread_self(), 0);
}

void ThreadPool::set_pinning(bool pin) {
  std::lock_guard<std::mutex> region(region_mutex_);
  pin_workers_ = pin;
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (pin) {
      pin_to_cpu(workers_[i].native_handle(), static_cast<int>(i) + 1);
    } else {
      cpu_set_t all;
      CPU_ZERO(&all);
      for (int c : allowed_cpus()) CPU_SET(c, &all);
      pthread_setaffinity_np(workers_[i].native_handle(), sizeof all, &all);
    }
  }
}

ThreadPool::ThreadPool(int threads) {
  set_num_threads(threads);
}

ThreadPool::~ThreadPool() {
  stop_workers();
}

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  worker_count_.store(0, std::memory_order_relaxed);
  stopping_ = false;
}

void ThreadPool::set_num_threads(int threads) {
  std::lock_guard<std::mutex> region(region_mutex_);
  stop_workers();
  // Workers start from the current generation, read here (no region can run now), not
  // when they first get scheduled: a region published before that must not be missed.
  uint64_t start = generation_.load();
  for (int i = 1; i < std::max(1, threads); ++i) {
    workers_.emplace_back([this, start] { worker_loop(start); });
    if (pin_workers_) pin_to_cpu(workers_.back().native_handle(), i);
  }
  worker_count_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
}

void ThreadPool::run_tasks() {
  for (int64_t i = next_.fetch_add(1); i < count_; i = next_.fetch_add(1))
    body_(i, i + 1, closure_);
}

void ThreadPool::worker_loop(uint64_t seen) {
  while (true) {
    auto idle_since = std::chrono::steady_clock::now();
    uint64_t current;
    while ((current = generation_.load(std::memory_order_acquire)) == seen && !stopping_) {
      if (std::chrono::steady_clock::now() - idle_since <
          std::chrono::nanoseconds(kSpinNanoseconds)) {
        _mm_pause();
        continue;
      }
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      ++sleeping_;
      wake_.wait(lock, [&] { return generation_.load() != seen || stopping_; });
      --sleeping_;
    }
    if (stopping_) return;
    seen = current;
    const uint64_t generation = current << kDoorGenerationShift;
    uint64_t door = door_.load(std::memory_order_acquire);
    bool joined = false;
    while (!joined && (door & ~(kDoorClosed - 1)) == generation)
      joined = door_.compare_exchange_weak(door, door + 1, std::memory_order_acq_rel);
    if (!joined) continue;  // closed, or already another region's
    run_tasks();
    left_.fetch_add(1, std::memory_order_release);
  }
}

void ThreadPool::parallel_for(int64_t n, RangeBody body, void* closure) {
  if (n <= 0) return;
  if (n == 1 || worker_count_.load(std::memory_order_relaxed) == 0) {
    body(0, n, closure);
    return;
  }
  std::unique_lock<std::mutex> region(region_mutex_, std::try_to_lock);
  if (workers_.empty() || !region.owns_lock()) {
    body(0, n, closure);
    return;
  }
  body_ = body;
  closure_ = closure;
  count_ = n;
  next_.store(0, std::memory_order_relaxed);
  left_.store(0, std::memory_order_relaxed);
  const uint64_t generation = generation_.load(std::memory_order_relaxed) + 1;
  door_.store(generation << kDoorGenerationShift, std::memory_order_release);
  {
    // Under the lock, so that a worker about to sleep cannot miss the new region.
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    generation_.store(generation, std::memory_order_release);
    if (sleeping_ > 0) wake_.notify_all();
  }
  run_tasks();
  const int joined =
      static_cast<int>(door_.fetch_or(kDoorClosed, std::memory_order_acq_rel) & (kDoorClosed - 1));
  while (left_.load(std::memory_order_acquire) != joined) _mm_pause();
}

}  // namespace dietcode::runtime

extern "C" void dietcode_parallel_for(int64_t n, void (*body)(int64_t, int64_t, void*),
                                      void* closure, int64_t work) {
  dietcode::runtime::ThreadPool& pool = dietcode::runtime::ThreadPool::global();
  if (work >= 0 && work < pool.serial_work()) {
    body(0, n, closure);
    return;
  }
  pool.parallel_for(n, body, closure);
}
