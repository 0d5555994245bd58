#include <gtest/gtest.h>

#include <cstdint>

#include "runtime/buffer.h"

using namespace dietcode;

TEST(Buffers, StartOnACacheLine) {
  // Large sizes come from mmap, where malloc's own blocks start 16 bytes into a page.
  for (int64_t n : {1, 7, 1000, 1 << 20}) {
    runtime::AlignedBuffer buffer(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % 64, 0u) << n;
    runtime::AlignedVector<float> v(n, 1.5f);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % 64, 0u) << n;
    v.resize(3 * n + 1);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % 64, 0u) << n;
    EXPECT_EQ(v[0], 1.5f);
    runtime::AlignedVector<float> copy = v;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(copy.data()) % 64, 0u) << n;
  }
}
