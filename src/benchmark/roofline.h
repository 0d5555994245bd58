// The machine's two ceilings, measured by the benchmark itself at start:
//   - the FMA peak: independent vector FMA chains, nothing else;
//   - the read bandwidth of each cache level and of DRAM: vector loads over a buffer
//     sized to sit in that level, per thread;
//   - for operators that write as much as they read (the row operators), the rate of a
//     loop streaming inputs into an output over the data's footprint (stream_level).
// A shape's roofline is min(peak, flops / (bytes / bandwidth of the level holding its data)).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "schedule/isa.h"

namespace dietcode::bench {

struct MemoryLevel {
  std::string name;         // "L1", "L2", "L3", "DRAM", or a footprint ("64MiB")
  int64_t capacity = 0;     // bytes usable by the measured threads together
  double gbps = 0;          // measured read bandwidth, all threads together
  int64_t probe_bytes = 0;  // what the read loop that measured it read, per thread
};

struct Roofline {
  int threads = 1;
  schedule::Isa isa = schedule::Isa::Avx2;
  double peak_gflops = 0;           // all threads together
  std::vector<MemoryLevel> levels;  // smallest first, DRAM last

  // The level that holds `bytes`: L1 or L2 (a core's own) if one is as large; beyond them
  // and below the DRAM probe's size, the rate of the read loop over that footprint (rounded
  // up to an eighth of its octave; measured the first time, ~0.1-0.5 s). A shared L3's rate
  // falls with the footprint, whether the guest sees the L3 or not: a VM's hidden 32 MiB L3
  // read 28 MB at 65-79 GB/s, 340 MB at 41; the Intel VM, which sees its host's 480 MiB,
  // read 28 MiB at 29 GB/s, 120 MiB (its L3 probe) at 19-21 and 340 MiB at 16.
  MemoryLevel level_for(double bytes) const;
  // Runs the read loop of level_for(bytes) again and keeps the faster of its rates there (a
  // neighbour on a shared machine only ever slows a loop down, and one loop of ~0.1 s may
  // fall entirely in such a time: a two-thread main job read its 352 MiB at 36 GB/s once,
  // while the model streamed its 340 MB of weights at 66); returns this run's rate.
  double remeasure(double bytes);
  // Runs the FMA probe again and keeps the faster peak, as remeasure does for a level (a
  // one-thread main job's encoder table once took 141 GFLOP/s for the peak, and the products
  // table 211 minutes later); returns this run's rate.
  double remeasure_peak();
  // The memory ceiling of an operator that reads `read_bytes` and writes `write_bytes`,
  // each once: level_for's level of their sum, at the rate of a loop that streams as many
  // inputs (their ratio, 1 to 4) into one output over that footprint, both directions
  // counted (measured the first time, then reused). Writes cost more than reads: at L2's
  // size such a copy moved its bytes at half the read loop's rate on the Intel VM.
  MemoryLevel stream_level(double read_bytes, double write_bytes) const;
  double ceiling_gflops(double flops, double bytes) const;
  // With the bytes coming from `from` (DRAM for weights that are cold).
  double ceiling_gflops(double flops, double bytes, const MemoryLevel& from) const;
  // The memory term of that ceiling: `flops` over the time `bytes` take at `from`'s rate.
  static double memory_gflops(double flops, double bytes, const MemoryLevel& from);
  std::string describe() const;

 private:
  mutable std::map<int64_t, MemoryLevel> footprints_;  // measured by level_for
  // (footprint, inputs) -> GB/s, measured by stream_level.
  mutable std::map<std::pair<int64_t, int>, double> streams_;
};

// Measures with `threads` threads (each pinned to no particular core). Takes ~1 s.
Roofline measure_roofline(int threads, schedule::Isa isa);

}  // namespace dietcode::bench
