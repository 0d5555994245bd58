#include "runtime/buffer.h"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

#include "support/error.h"
#include "support/int_math.h"

namespace dietcode::runtime {

void AlignedBuffer::Free::operator()(float* p) const {
  std::free(p);
}

namespace {

// Buffers of several huge pages (pre-packed weights: 2-10 MB per matrix of BERT-base)
// start on a huge-page boundary and ask for transparent huge pages: a page fault per
// 2 MiB instead of per 4 KiB when they are first written (4 KiB faults were most of the
// time to pack a model's weights on a VM), and fewer TLB misses when a kernel streams
// them. The tail past the last whole huge page stays in small pages (nothing is rounded up).
constexpr size_t kHugePage = size_t{2} << 20;

}  // namespace

AlignedBuffer::AlignedBuffer(int64_t elements) : size_(elements) {
  if (elements < 0) user_error("buffer of {} elements: the size must be >= 0", elements);
  size_t bytes = round_up(static_cast<size_t>(elements) * sizeof(float), 64);
  const bool huge = bytes >= 2 * kHugePage;
  void* p = nullptr;
  if (posix_memalign(&p, huge ? kHugePage : 64, bytes == 0 ? 64 : bytes) != 0 || !p)
    throw std::bad_alloc();
  if (huge) madvise(p, bytes, MADV_HUGEPAGE);  // advice only: without THP, small pages
  data_.reset(static_cast<float*>(p));
}

}  // namespace dietcode::runtime
