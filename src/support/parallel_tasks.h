// Load-time work split across the cores: parallel_tasks(n, fn) calls fn(0) .. fn(n - 1),
// each once, on up to one thread per core (the caller's among them), and returns when all
// are done. If tasks throw, the first failure in task order is rethrown. For coarse work
// done once (compiling a module's kernels, packing a model's weights), not for kernels'
// parallel loops, which run on the runtime's thread pool.
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

namespace dietcode {

template <class Fn>
void parallel_tasks(int n, const Fn& fn) {
  std::vector<std::exception_ptr> errors(std::max(n, 0));
  std::atomic<int> next{0};
  auto work = [&] {
    for (int i = next++; i < n; i = next++) {
      try {
        fn(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const int threads = std::min<int>(n, int(std::max(1u, std::thread::hardware_concurrency())));
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();
  for (std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace dietcode
