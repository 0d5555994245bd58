#include "runtime/buffer.h"

#include <gtest/gtest.h>

#include <cstdint>

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

TEST(Buffers, OfAHugePageOrMoreStartOnOne) {
  // A matrix of BERT-base's out layer (768 x 768: 2.25 MiB) is streamed from DRAM once per
  // call inside a model; on 4 KiB pages its TLB misses cost it 22-25% (twelve layers, T =
  // 16 and 64), so from 2 MiB on a buffer starts on a huge page (and may use them).
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  for (int64_t n : {int64_t(kHuge / 4), int64_t(768 * 768), int64_t(3072 * 768 + 5)}) {
    runtime::AlignedBuffer buffer(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % kHuge, 0u) << n;
    buffer[n - 1] = 2.0f;  // the whole size is usable
    EXPECT_EQ(buffer[n - 1], 2.0f);
  }
}
