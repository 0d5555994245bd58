// Packing scratch for generated code (dietcode_alloc / dietcode_free, runtime/abi.h).
//
// Generated code allocates its panels in strictly nested order on each thread
// (Allocate statements nest), so a per-thread stack of 64-byte aligned chunks serves
// them: a call reuses the memory of the previous one instead of going to malloc,
// which for panels over glibc's mmap threshold (128 KiB) means an mmap, page faults
// and an munmap on every call (tens of microseconds, more than a small GEMM takes).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "runtime/abi.h"
#include "runtime/module.h"
#include "support/int_math.h"

namespace {

struct Chunk {
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> memory;
  size_t size = 0, used = 0;
};

class ScratchStack {
 public:
  // Room for the bookkeeping of nested panels (a kernel nests two or three), so that a
  // call after the first allocates nothing but a chunk larger than any before.
  ScratchStack() {
    chunks_.reserve(8);
    sizes_.reserve(16);
  }

  // A chunk of at least 1 MiB and `bytes`; aborts with a message if memory runs out.
  static Chunk new_chunk(size_t bytes) {
    Chunk c;
    c.size = std::max<size_t>(bytes, size_t{1} << 20);
    c.memory.reset(static_cast<char*>(std::aligned_alloc(64, c.size)));
    if (!c.memory) {
      std::fprintf(stderr, "dietcode: out of memory allocating %zu bytes of packing scratch\n",
                   bytes);
      std::abort();
    }
    return c;
  }

  void* push(size_t bytes) {
    bytes = dietcode::round_up(bytes, 64);
    if (bytes == 0) bytes = 64;
    // The first chunk (from the bottom) with room above its top; chunks above the
    // current top are empty and reusable.
    while (top_ < chunks_.size() && chunks_[top_].size - chunks_[top_].used < bytes) {
      if (chunks_[top_].used == 0) {  // an empty chunk too small: replace it
        chunks_.erase(chunks_.begin() + top_);
        continue;
      }
      ++top_;
    }
    if (top_ == chunks_.size()) chunks_.push_back(new_chunk(bytes));
    Chunk& c = chunks_[top_];
    void* p = c.memory.get() + c.used;
    c.used += bytes;
    sizes_.push_back({top_, bytes});
    return p;
  }

  // Between calls (nothing live): makes the bottom chunk at least `bytes`, so that
  // allocations nesting up to that much take nothing from malloc.
  void reserve(size_t bytes) {
    if (!sizes_.empty()) return;
    bytes = dietcode::round_up(std::max<size_t>(bytes, 1), 64);
    if (!chunks_.empty() && chunks_.front().size >= bytes) return;
    chunks_.clear();
    top_ = 0;
    chunks_.push_back(new_chunk(bytes));
  }

  void pop() {
    auto [chunk, bytes] = sizes_.back();
    sizes_.pop_back();
    chunks_[chunk].used -= bytes;
    top_ = chunk;
  }

 private:
  std::vector<Chunk> chunks_;
  std::vector<std::pair<size_t, size_t>> sizes_;  // (chunk, bytes) of each live allocation
  size_t top_ = 0;
};

thread_local ScratchStack scratch;

}  // namespace

namespace dietcode::runtime {

void reserve_scratch(int64_t bytes) {
  scratch.reserve(static_cast<size_t>(std::max<int64_t>(bytes, 0)));
}

}  // namespace dietcode::runtime

extern "C" void* dietcode_alloc(int64_t bytes) {
  return scratch.push(static_cast<size_t>(bytes));
}

extern "C" void dietcode_free(void*) {
  scratch.pop();
}
