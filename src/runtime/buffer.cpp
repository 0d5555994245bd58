#include "runtime/buffer.h"

#include <cstdlib>
#include <new>

#include "support/error.h"
#include "support/int_math.h"

namespace dietcode::runtime {

void AlignedBuffer::Free::operator()(float* p) const {
  std::free(p);
}

AlignedBuffer::AlignedBuffer(int64_t elements) : size_(elements) {
  if (elements < 0) user_error("buffer of {} elements: the size must be >= 0", elements);
  size_t bytes = round_up(static_cast<size_t>(elements) * sizeof(float), 64);
  auto* p = static_cast<float*>(std::aligned_alloc(64, bytes == 0 ? 64 : bytes));
  if (!p) throw std::bad_alloc();
  data_.reset(p);
}

}  // namespace dietcode::runtime
