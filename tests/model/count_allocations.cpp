// The global operator new and delete replaced with counting ones (count_allocations.h),
// in a file of their own so that the compiler never sees them inlined beside its builtin
// allocation functions.
#include "count_allocations.h"

#include <cstdlib>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define DC_COUNT_ALLOCATIONS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DC_COUNT_ALLOCATIONS 0
#endif
#endif
#ifndef DC_COUNT_ALLOCATIONS
#define DC_COUNT_ALLOCATIONS 1
#endif

namespace {
thread_local bool counting = false;
thread_local int64_t count = 0;
}  // namespace

namespace testing_alloc {
bool counting_supported() {
  return DC_COUNT_ALLOCATIONS;
}
void start() {
  count = 0;
  counting = true;
}
int64_t stop() {
  counting = false;
  return count;
}
}  // namespace testing_alloc

#if DC_COUNT_ALLOCATIONS
void* operator new(std::size_t n) {
  if (counting) ++count;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
#endif
