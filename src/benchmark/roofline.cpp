#include "benchmark/roofline.h"

#include <fmt/format.h>
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "runtime/buffer.h"
#include "support/cpu_caches.h"

namespace dietcode::bench {

namespace {

using Clock = std::chrono::steady_clock;

// The probes measure the machine: under the sanitizer build (scripts/sanitize.sh) they
// stay uninstrumented, like the generated kernels whose rates they bound; instrumented,
// their checked loads put the roofline below what the JIT code reaches.
#define DC_ROOFLINE_PROBE __attribute__((no_sanitize("address", "undefined")))

// 12 independent FMA chains (enough to cover FMA latency x throughput on current x86).
DC_ROOFLINE_PROBE __attribute__((target("avx2,fma"))) float fma_chains_avx2(int64_t iterations) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(0.001f * i);
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.0001f);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  __m256 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
  return _mm256_cvtss_f32(s);
}

DC_ROOFLINE_PROBE __attribute__((target("avx512f"))) float fma_chains_avx512(int64_t iterations) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(0.001f * i);
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.0001f);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  __m512 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  return lanes[0] + lanes[15];
}

// The read loop: eight independent add chains of vectors V (a GCC vector type) a step,
// written out so that the accumulators stay in registers (an array of them, indexed in an
// inner loop, stayed on the stack at -O2 and read DRAM 20% slower). Enough chains that
// load throughput, not add latency, is the limit even in L1. Inlined into a function of
// the vector's ISA.
using Floats8 = float __attribute__((vector_size(32), may_alias));
using Floats16 = float __attribute__((vector_size(64), may_alias));

template <typename V>
DC_ROOFLINE_PROBE __attribute__((always_inline)) inline float read_sum_of(const float* p, int64_t n,
                                                                          int passes) {
  constexpr int64_t w = sizeof(V) / sizeof(float);
  V a0{}, a1{}, a2{}, a3{}, a4{}, a5{}, a6{}, a7{};
  for (int pass = 0; pass < passes; ++pass)
    for (int64_t i = 0; i + 8 * w <= n; i += 8 * w) {
      const V* v = reinterpret_cast<const V*>(p + i);
      a0 += v[0];
      a1 += v[1];
      a2 += v[2];
      a3 += v[3];
      a4 += v[4];
      a5 += v[5];
      a6 += v[6];
      a7 += v[7];
    }
  const V s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
  return s[0] + s[w - 1];
}

DC_ROOFLINE_PROBE __attribute__((target("avx2"))) float read_sum(const float* p, int64_t n,
                                                                 int passes) {
  return read_sum_of<Floats8>(p, n, passes);
}

// 512-bit loads, the width the AVX-512 kernels load with (256-bit loads read DRAM 5-7%
// slower on the Zen 5 VM).
DC_ROOFLINE_PROBE __attribute__((target("avx512f"))) float read_sum_avx512(const float* p,
                                                                           int64_t n, int passes) {
  return read_sum_of<Floats16>(p, n, passes);
}

// The stream loop: out = in[0] * one (+ in[1] + ...) over n floats, `passes` times: each
// element of every input read once and of the output written once, as a row operator moves
// its data (STREAM's copy and add). A write costs more than a read (the line is read before
// it is written, and written back later): at a private cache's size a copy moves its bytes
// at about half the read loop's rate. `one` is a runtime 1, so no copy becomes a memcpy.
template <typename V, int Inputs>
DC_ROOFLINE_PROBE __attribute__((always_inline)) inline void stream_of(const float* const* in,
                                                                       float* out, int64_t n,
                                                                       int passes, float one) {
  constexpr int64_t w = sizeof(V) / sizeof(float);
  const V scale = V{} + one;
  // The pointers in locals: a store through V (may_alias) could otherwise change in[j], and
  // each would be loaded again after every store.
  const float* p[Inputs];
  for (int j = 0; j < Inputs; ++j) p[j] = in[j];
  for (int pass = 0; pass < passes; ++pass) {
    for (int64_t i = 0; i + w <= n; i += w) {
      V v = *reinterpret_cast<const V*>(p[0] + i) * scale;
      for (int j = 1; j < Inputs; ++j) v += *reinterpret_cast<const V*>(p[j] + i);
      *reinterpret_cast<V*>(out + i) = v;
    }
    asm volatile("" : : "r"(out) : "memory");  // every pass stores
  }
}

template <typename V>
DC_ROOFLINE_PROBE __attribute__((always_inline)) inline void stream_inputs(const float* const* in,
                                                                           int inputs, float* out,
                                                                           int64_t n, int passes,
                                                                           float one) {
  switch (inputs) {
    case 1:
      return stream_of<V, 1>(in, out, n, passes, one);
    case 2:
      return stream_of<V, 2>(in, out, n, passes, one);
    case 3:
      return stream_of<V, 3>(in, out, n, passes, one);
    default:
      return stream_of<V, 4>(in, out, n, passes, one);
  }
}

DC_ROOFLINE_PROBE __attribute__((target("avx2"))) void stream(const float* const* in, int inputs,
                                                              float* out, int64_t n, int passes,
                                                              float one) {
  stream_inputs<Floats8>(in, inputs, out, n, passes, one);
}

DC_ROOFLINE_PROBE __attribute__((target("avx512f"))) void stream_avx512(const float* const* in,
                                                                        int inputs, float* out,
                                                                        int64_t n, int passes,
                                                                        float one) {
  stream_inputs<Floats16>(in, inputs, out, n, passes, one);
}

// Runs fn(thread_index) on `threads` threads at once; returns the wall time. A caller pinned
// to one CPU (the bench pins its thread before measuring footprints lazily) would hand its
// one CPU down to the threads it starts: they get the other CPUs instead.
template <typename Fn>
double timed_on_threads(int threads, Fn fn) {
  cpu_set_t others;
  CPU_ZERO(&others);
  bool pinned = false;
  if (cpu_set_t mine; threads > 1 &&
                      pthread_getaffinity_np(pthread_self(), sizeof mine, &mine) == 0 &&
                      CPU_COUNT(&mine) == 1) {
    pinned = true;
    for (unsigned c = 0; c < std::thread::hardware_concurrency() && c < CPU_SETSIZE; ++c)
      if (!CPU_ISSET(c, &mine)) CPU_SET(c, &others);
  }
  std::vector<std::thread> pool;
  auto start = Clock::now();
  for (int t = 1; t < threads; ++t) {
    pool.emplace_back([&, t] {
      if (pinned) pthread_setaffinity_np(pthread_self(), sizeof others, &others);  // best effort
      fn(t);
    });
  }
  fn(0);
  for (std::thread& t : pool) t.join();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

volatile float sink;

double measure_peak(int threads, schedule::Isa isa) {
  const int64_t iterations = 20'000'000;
  const double lanes = double(schedule::vector_isa(isa).width);
  double best = 1e30;
  for (int rep = 0; rep < 7; ++rep)  // the best of several: clocks ramp and neighbours come and go
    best = std::min(best, timed_on_threads(threads, [&](int) {
                      sink = isa == schedule::Isa::Avx512 ? fma_chains_avx512(iterations)
                                                          : fma_chains_avx2(iterations);
                    }));
  return threads * iterations * 12.0 * lanes * 2.0 / best * 1e-9;
}

double measure_bandwidth(int threads, int64_t bytes_per_thread, schedule::Isa isa) {
  int64_t n = std::max<int64_t>(bytes_per_thread / 4 / 128 * 128, 128);
  std::vector<runtime::AlignedBuffer> buffers;
  for (int t = 0; t < threads; ++t) {
    buffers.emplace_back(n);
    for (int64_t i = 0; i < n; ++i) buffers.back()[i] = 1.0f;
  }
  int passes = static_cast<int>(std::clamp<int64_t>((int64_t{1} << 30) / (n * 4), 1, 100000));
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep)  // the best of several, as for the peak
    best = std::min(best, timed_on_threads(threads, [&](int t) {
                      sink = isa == schedule::Isa::Avx512
                                 ? read_sum_avx512(buffers[t].data(), n, passes)
                                 : read_sum(buffers[t].data(), n, passes);
                    }));
  return threads * double(n) * 4 * passes / best * 1e-9;
}

volatile float runtime_one = 1.0f;

// The stream loop's rate, read and written bytes counted: each thread streams `inputs`
// arrays into one, the arrays together `bytes_per_thread` long.
double measure_stream(int threads, int64_t bytes_per_thread, int inputs, schedule::Isa isa) {
  const int64_t n = std::max<int64_t>(bytes_per_thread / 4 / (inputs + 1) / 128 * 128, 128);
  std::vector<std::vector<runtime::AlignedBuffer>> buffers(static_cast<size_t>(threads));
  for (auto& arrays : buffers)
    for (int a = 0; a <= inputs; ++a) {  // the inputs, then the output
      arrays.emplace_back(n);
      for (int64_t i = 0; i < n; ++i) arrays.back()[i] = 1.0f;
    }
  const int64_t moved = n * 4 * (inputs + 1);
  int passes = static_cast<int>(std::clamp<int64_t>((int64_t{1} << 29) / moved, 1, 100000));
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep)  // the best of several, as for the read loop
    best = std::min(best, timed_on_threads(threads, [&](int t) {
                      std::vector<const float*> in;
                      for (int a = 0; a < inputs; ++a) in.push_back(buffers[t][a].data());
                      float* out = buffers[t][inputs].data();
                      if (isa == schedule::Isa::Avx512)
                        stream_avx512(in.data(), inputs, out, n, passes, runtime_one);
                      else
                        stream(in.data(), inputs, out, n, passes, runtime_one);
                    }));
  return threads * double(moved) * passes / best * 1e-9;
}

// The DRAM probe reads this many bytes (all threads together): far beyond the part of a
// last-level cache one core keeps. A virtual machine may hide its caches (no sysfs entries,
// no CPUID cache leaves); one of this kind has a 32 MiB L3 that its guest cannot see, and a
// read loop over 32 MiB ran at 70 GB/s there against 42 over 512 MiB or 1 GiB, the rate at
// which a model's weights stream (src/benchmark/README.md, "The roofline"). Not scaled with
// the L3 the guest sees: the Intel VM sees its host's 480 MiB, which it shares, and read
// 340 MiB, 512 MiB and 1.9 GiB loops at the same 15.2-15.7 GB/s (stop 56).
constexpr int64_t kDramProbeBytes = int64_t{512} << 20;

// L1 and L2: a core's own, and its data there is read at their probes' rate. Data beyond
// them is read at the rate of a loop over its own footprint (Roofline::level_for).
bool private_level(const MemoryLevel& l) {
  return l.name == "L1" || l.name == "L2";
}

// Rounded up to an eighth of its octave: near the hidden cache's size the rate falls
// steeply (two threads: a 9.4 MB product's weights warm at 180 GB/s, a 16 MiB loop at 98).
int64_t rounded_footprint(double bytes) {
  int64_t step = 1;
  while (double(step) * 2 <= bytes) step *= 2;
  step = std::max<int64_t>(step / 8, 1);
  return (int64_t(bytes) + step - 1) / step * step;
}

}  // namespace

MemoryLevel Roofline::level_for(double bytes) const {
  for (const MemoryLevel& l : levels)
    if (private_level(l) && bytes <= double(l.capacity)) return l;
  if (bytes >= double(kDramProbeBytes)) return levels.back();
  const int64_t footprint = rounded_footprint(bytes);
  auto it = footprints_.find(footprint);
  if (it == footprints_.end())
    it = footprints_
             .emplace(footprint,
                      MemoryLevel{fmt::format("{:.3g}MiB", double(footprint) / (1 << 20)),
                                  footprint, measure_bandwidth(threads, footprint / threads, isa),
                                  footprint / threads})
             .first;
  return it->second;
}

MemoryLevel Roofline::stream_level(double read_bytes, double write_bytes) const {
  MemoryLevel level = level_for(read_bytes + write_bytes);
  const int inputs =
      int(std::clamp<double>(std::round(read_bytes / std::max(write_bytes, 1.0)), 1, 4));
  const int64_t footprint = std::min(rounded_footprint(read_bytes + write_bytes), kDramProbeBytes);
  auto it = streams_.find({footprint, inputs});
  if (it == streams_.end())
    it = streams_
             .emplace(std::pair{footprint, inputs},
                      measure_stream(threads, footprint / threads, inputs, isa))
             .first;
  level.gbps = it->second;
  level.probe_bytes = footprint / threads;
  return level;
}

double Roofline::remeasure(double bytes) {
  const std::string name = level_for(bytes).name;  // measured once, if it was not yet
  MemoryLevel* level = nullptr;
  for (MemoryLevel& l : levels)
    if (l.name == name) level = &l;
  for (auto& [footprint, l] : footprints_)
    if (l.name == name) level = &l;
  const double gbps = measure_bandwidth(threads, level->probe_bytes, isa);
  level->gbps = std::max(level->gbps, gbps);
  return gbps;
}

double Roofline::remeasure_peak() {
  const double gflops = measure_peak(threads, isa);
  peak_gflops = std::max(peak_gflops, gflops);
  return gflops;
}

double Roofline::ceiling_gflops(double flops, double bytes) const {
  return ceiling_gflops(flops, bytes, level_for(bytes));
}

double Roofline::memory_gflops(double flops, double bytes, const MemoryLevel& from) {
  double seconds = bytes / (from.gbps * 1e9);
  return flops / seconds * 1e-9;
}

double Roofline::ceiling_gflops(double flops, double bytes, const MemoryLevel& from) const {
  return std::min(peak_gflops, memory_gflops(flops, bytes, from));
}

std::string Roofline::describe() const {
  std::string s = fmt::format("roofline ({} thread{}): FMA peak {:.1f} GFLOP/s", threads,
                              threads > 1 ? "s" : "", peak_gflops);
  for (const MemoryLevel& l : levels)
    s += fmt::format(", {} {:.0f} GB/s{}", l.name, l.gbps,
                     l.name == "DRAM" ? "" : fmt::format(" (<= {} KiB)", l.capacity >> 10));
  return s + "; between the last cache and DRAM, a read loop over the data's footprint";
}

Roofline measure_roofline(int threads, schedule::Isa isa) {
  Roofline r;
  r.threads = threads;
  r.isa = isa;
  r.peak_gflops = measure_peak(threads, isa);
  const CacheSizes& host = host_cache_sizes();
  int64_t l1 = host.l1, l2 = host.l2, l3 = host.l3;
  if (l1 == 0) l1 = 32 << 10;
  if (l2 == 0) l2 = 512 << 10;
  if (l3 == 0) l3 = 8 << 20;
  // Private levels scale with the threads; the last level is shared. Data is measured at
  // half of each capacity so that it stays resident.
  auto level = [&](const char* name, int64_t capacity, int64_t probe_bytes) {
    r.levels.push_back({name, capacity, measure_bandwidth(threads, probe_bytes, isa), probe_bytes});
  };
  level("L1", l1 * threads, l1 / 2);
  level("L2", l2 * threads, l2 / 2);
  // L3 at a quarter of its size: beyond the private levels, well inside the shared one
  // (on shared machines the part of the L3 a tenant keeps is smaller than its size). A
  // reference in the printed ceilings; a shape's data beyond L2 is measured at its own
  // footprint (level_for).
  level("L3", l3, std::max(2 * l2, l3 / 4 / threads));
  level("DRAM", int64_t{1} << 62, kDramProbeBytes / threads);
  return r;
}

}  // namespace dietcode::bench
