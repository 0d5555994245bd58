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

// Buffers of a huge page or more (pre-packed weights: 2.25-9 MiB per matrix of BERT-base)
// are rounded up to whole huge pages, start on a huge-page boundary and ask for transparent
// huge pages: a page fault per 2 MiB instead of per 4 KiB when they are first written (4 KiB
// faults were most of the time to pack a model's weights on a VM), and a TLB miss per 2 MiB
// instead of per 4 KiB when a kernel streams them from DRAM (the 768 x 768 matrix of
// BERT-base, 2.25 MiB, on small pages: its layer 22-25% slower inside twelve layers at T =
// 16 and 64). The rounding costs at most one huge page a buffer (12 layers: +44 MB).
constexpr size_t kHugePage = size_t{2} << 20;

}  // namespace

AlignedBuffer::AlignedBuffer(int64_t elements) : size_(elements) {
  if (elements < 0) user_error("buffer of {} elements: the size must be >= 0", elements);
  size_t bytes = round_up(static_cast<size_t>(elements) * sizeof(float), 64);
  const bool huge = bytes >= kHugePage;
  if (huge) bytes = round_up(bytes, kHugePage);
  void* p = nullptr;
  if (posix_memalign(&p, huge ? kHugePage : 64, bytes == 0 ? 64 : bytes) != 0 || !p)
    throw std::bad_alloc();
  if (huge) madvise(p, bytes, MADV_HUGEPAGE);  // advice only: without THP, small pages
  data_.reset(static_cast<float*>(p));
}

}  // namespace dietcode::runtime
