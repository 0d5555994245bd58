// How much of a weight stream from DRAM software prefetch can hide behind multiply-adds:
// the pattern of a dense kernel at a mid sequence length (M = 8-32) with cold weights.
//
// A "tile" is one column tile's B as the kernels pack it (3 vector panels of K = 768 rows of
// 16 floats: 147 KiB, contiguous). For each tile of a 9.4 MB matrix (ffn1's), a compute
// phase of `steps` steps of 12 independent FMAs (registers only, 6 cycles a step) runs while
// the next tile is prefetched by one of the strategies below, then the tile itself is read
// with loads (as a kernel's next call reads it). Each pass takes the next of a ring of
// copies in 256 MiB, so every tile comes from DRAM. Ideal: max(compute only, stream only).
//
//   bench_prefetch_overlap [STEPS [TILES]]   # default 1500 (~as long as the stream) and 3000
//
// Stop 63 on the Emerald Rapids VM (docs/results.md): prefetching the next tile into L2,
// spread over the compute phase (what `prefetch_next` does), got within 1.3-1.4x of the
// ideal; a burst at the start of the phase, into L1, two tiles ahead or one line in four
// did no better. Streaming by prefetch alone ran slower than by loads.
#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr long kTile = 3 * 768 * 16 * 4;  // bytes
constexpr long kLines = kTile / 64;

enum class Prefetch { None, L2, L1, L2TwoAhead, L2EveryFourth, L2Burst };

struct Config {
  const char* name;
  bool compute, read;
  Prefetch prefetch;
};

__attribute__((target("avx512f"), noipa)) float pass(const char* base, long tiles, long steps,
                                                     const Config& c) {
  __m512 a0 = _mm512_set1_ps(0.001f), a1 = _mm512_set1_ps(0.002f), a2 = _mm512_set1_ps(0.003f),
         a3 = _mm512_set1_ps(0.004f), a4 = _mm512_set1_ps(0.005f), a5 = _mm512_set1_ps(0.006f),
         a6 = _mm512_set1_ps(0.007f), a7 = _mm512_set1_ps(0.008f), a8 = _mm512_set1_ps(0.009f),
         a9 = _mm512_set1_ps(0.010f), a10 = _mm512_set1_ps(0.011f), a11 = _mm512_set1_ps(0.012f);
  const __m512 m = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.0001f);
  __m512 sum = _mm512_setzero_ps();
  const long n = c.compute ? steps : (c.prefetch == Prefetch::None ? 0 : 1);
  for (long t = 0; t < tiles; ++t) {
    const char* tile = base + t * kTile;
    const char* next = tile + (c.prefetch == Prefetch::L2TwoAhead ? 2 : 1) * kTile;
    long done = 0;  // lines of the next tile prefetched so far
    for (long k = 0; k < n; ++k) {
      if (c.compute) {
        a0 = _mm512_fmadd_ps(a0, m, b), a1 = _mm512_fmadd_ps(a1, m, b);
        a2 = _mm512_fmadd_ps(a2, m, b), a3 = _mm512_fmadd_ps(a3, m, b);
        a4 = _mm512_fmadd_ps(a4, m, b), a5 = _mm512_fmadd_ps(a5, m, b);
        a6 = _mm512_fmadd_ps(a6, m, b), a7 = _mm512_fmadd_ps(a7, m, b);
        a8 = _mm512_fmadd_ps(a8, m, b), a9 = _mm512_fmadd_ps(a9, m, b);
        a10 = _mm512_fmadd_ps(a10, m, b), a11 = _mm512_fmadd_ps(a11, m, b);
      }
      // Spread evenly over the phase: line l once step k passes l / kLines of it.
      const long burst = std::min(n, 50L);  // steps the burst takes
      long until = c.prefetch == Prefetch::L2Burst ? (k < burst ? kLines * (k + 1) / burst : kLines)
                                                   : kLines * (k + 1) / n;
      for (; done < until; ++done) {
        const char* line = next + done * 64;
        switch (c.prefetch) {
          case Prefetch::None:
            break;
          case Prefetch::L1:
            _mm_prefetch(line, _MM_HINT_T0);
            break;
          case Prefetch::L2EveryFourth:
            if (done % 4 == 0) _mm_prefetch(line, _MM_HINT_T1);
            break;
          default:
            _mm_prefetch(line, _MM_HINT_T1);
        }
      }
    }
    if (c.read) {
      __m512 x0 = _mm512_setzero_ps(), x1 = x0, x2 = x0, x3 = x0;
      for (long l = 0; l < kLines; l += 4) {
        x0 = _mm512_add_ps(x0, _mm512_load_ps(reinterpret_cast<const float*>(tile + l * 64)));
        x1 = _mm512_add_ps(x1, _mm512_load_ps(reinterpret_cast<const float*>(tile + l * 64 + 64)));
        x2 = _mm512_add_ps(x2, _mm512_load_ps(reinterpret_cast<const float*>(tile + l * 64 + 128)));
        x3 = _mm512_add_ps(x3, _mm512_load_ps(reinterpret_cast<const float*>(tile + l * 64 + 192)));
      }
      sum = _mm512_add_ps(sum, _mm512_add_ps(_mm512_add_ps(x0, x1), _mm512_add_ps(x2, x3)));
    }
  }
  __m512 r = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                           _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
  r = _mm512_add_ps(r, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, _mm512_add_ps(r, sum));
  return lanes[0] + lanes[15];
}

}  // namespace

int main(int argc, char** argv) {
  if (!__builtin_cpu_supports("avx512f")) {
    std::printf("bench_prefetch_overlap: needs AVX-512 (this CPU has none)\n");
    return 0;
  }
  std::vector<long> steps_list = {1500, 3000};
  if (argc > 1) steps_list = {std::atol(argv[1])};
  const long tiles = argc > 2 ? std::atol(argv[2]) : 64;
  if (steps_list[0] < 1 || tiles < 1) {
    std::fprintf(stderr, "usage: bench_prefetch_overlap [STEPS >= 1 [TILES >= 1]]\n");
    return 2;
  }
  const long total = long{256} << 20, span = (tiles + 2) * kTile;
  if (span > total / 4) {
    std::fprintf(stderr, "bench_prefetch_overlap: at most %ld tiles\n", total / 4 / kTile - 2);
    return 2;
  }
  char* memory = static_cast<char*>(std::aligned_alloc(2 << 20, total));
  madvise(memory, total, MADV_HUGEPAGE);
  std::fill(reinterpret_cast<float*>(memory), reinterpret_cast<float*>(memory + total), 1e-6f);
  const Config configs[] = {
      {"compute only", true, false, Prefetch::None},
      {"stream only (loads)", false, true, Prefetch::None},
      {"compute, then loads; no prefetch", true, true, Prefetch::None},
      {"next tile into L2, spread (kernels)", true, true, Prefetch::L2},
      {"next tile into L1, spread", true, true, Prefetch::L1},
      {"two tiles ahead into L2, spread", true, true, Prefetch::L2TwoAhead},
      {"next tile into L2, one line in 4", true, true, Prefetch::L2EveryFourth},
      {"next tile into L2, burst at start", true, true, Prefetch::L2Burst},
  };
  const int n = sizeof configs / sizeof configs[0], rounds = 31;
  float sink = 0;
  long slot = 0;
  for (long steps : steps_list) {
    std::vector<std::vector<double>> seconds(n);
    for (int r = 0; r < rounds; ++r)  // interleaved: drift hits every configuration alike
      for (int c = 0; c < n; ++c) {
        slot = (slot + 1) % (total / span);
        auto start = Clock::now();
        sink += pass(memory + slot * span, tiles, steps, configs[c]);
        seconds[c].push_back(std::chrono::duration<double>(Clock::now() - start).count());
      }
    std::vector<double> median(n);
    for (int c = 0; c < n; ++c) {
      std::sort(seconds[c].begin(), seconds[c].end());
      median[c] = seconds[c][rounds / 2];
    }
    const double ideal = std::max(median[0], median[1]);
    std::printf("%ld tiles of %ld KiB, %ld steps of 12 FMAs per tile; median of %d rounds\n", tiles,
                kTile >> 10, steps, rounds);
    for (int c = 0; c < n; ++c)
      std::printf("  %-38s %8.1f us  %5.1f GB/s  %.2fx the ideal\n", configs[c].name,
                  median[c] * 1e6, double(tiles * kTile) / median[c] / 1e9, median[c] / ideal);
  }
  std::printf("(checksum %g)\n", sink);
  std::free(memory);
}
