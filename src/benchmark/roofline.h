// The machine's two ceilings, measured by the benchmark itself at start:
//   - the FMA peak: independent vector FMA chains, nothing else;
//   - the read bandwidth of each cache level and of DRAM: vector loads over a buffer
//     sized to sit in that level, per thread.
// A shape's roofline is min(peak, flops / (bytes / bandwidth of the level holding its data)).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/isa.h"

namespace dietcode::bench {

struct MemoryLevel {
  std::string name;      // "L1", "L2", "L3", "DRAM"
  int64_t capacity = 0;  // bytes usable by the measured threads together
  double gbps = 0;       // measured read bandwidth, all threads together
};

struct Roofline {
  int threads = 1;
  double peak_gflops = 0;           // all threads together
  std::vector<MemoryLevel> levels;  // smallest first, DRAM last

  const MemoryLevel& level_for(double bytes) const;
  double ceiling_gflops(double flops, double bytes) const;
  // With the bytes coming from `from` (DRAM for weights that are cold).
  double ceiling_gflops(double flops, double bytes, const MemoryLevel& from) const;
  std::string describe() const;
};

// Measures with `threads` threads (each pinned to no particular core). Takes ~1 s.
Roofline measure_roofline(int threads, schedule::Isa isa);

// GB/s of the read loop over `bytes` split across `threads` threads, re-read warm: the rate
// of data that size wherever the machine keeps it (for a footprint between the cache levels
// the guest sees, such as one encoder layer's 28 MB of weights in a VM's hidden L3).
double measure_read_bandwidth(int threads, int64_t bytes, schedule::Isa isa);

}  // namespace dietcode::bench
