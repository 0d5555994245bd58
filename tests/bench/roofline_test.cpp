// Roofline::level_for and stream_level (benchmark/roofline.h): which level's bandwidth a
// shape's bytes are measured against. Routing only; no rate is asserted beyond being measured.
#include "benchmark/roofline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "benchmark/harness.h"

namespace dietcode::bench {
namespace {

// Levels as measure_roofline lays them out, with made-up rates that no probe returns.
Roofline fake_roofline() {
  Roofline r;
  r.threads = 1;
  r.isa = schedule::Isa::Avx2;
  r.peak_gflops = 100;
  r.levels = {{"L1", 32 << 10, 1001},
              {"L2", 512 << 10, 1002},
              {"L3", 8 << 20, 1003},
              {"DRAM", int64_t{1} << 62, 1004}};
  return r;
}

TEST(Roofline, DataInThePrivateCachesTakesTheSmallestLevelThatHoldsIt) {
  Roofline r = fake_roofline();
  EXPECT_EQ(r.level_for(1).name, "L1");
  EXPECT_EQ(r.level_for(32 << 10).name, "L1");
  EXPECT_EQ(r.level_for((32 << 10) + 1).name, "L2");
  EXPECT_EQ(r.level_for(512 << 10).name, "L2");
  EXPECT_EQ(r.level_for(512 << 10).gbps, 1002);
}

// The shared L3 does not route: its rate falls with the footprint (the part a tenant keeps
// is smaller than its size), so data inside it is measured at its own footprint too.
TEST(Roofline, DataInsideTheSharedL3IsMeasuredAtItsFootprint) {
  Roofline r = fake_roofline();
  MemoryLevel l = r.level_for(4 << 20);
  EXPECT_NE(l.name, "L3");
  EXPECT_EQ(l.capacity, 4 << 20);
  EXPECT_NE(l.gbps, 1003);
  EXPECT_GT(l.gbps, 0);
  EXPECT_EQ(r.level_for((512 << 10) + 1).capacity, (512 << 10) + (64 << 10));
}

TEST(Roofline, DataAtTheDramProbesSizeIsDram) {
  Roofline r = fake_roofline();
  EXPECT_EQ(r.level_for(double(int64_t{512} << 20)).name, "DRAM");
  EXPECT_EQ(r.level_for(1e12).gbps, 1004);
}

// Between the last cache and DRAM: a level of its own, at least as large as the data,
// within an eighth of an octave of it, measured once and then reused.
TEST(Roofline, DataBetweenTheLastCacheAndDramIsMeasuredAtItsFootprint) {
  Roofline r = fake_roofline();
  const double bytes = 9.4e6;
  MemoryLevel first = r.level_for(bytes);
  EXPECT_GE(double(first.capacity), bytes);
  EXPECT_LE(double(first.capacity), bytes * 1.125);
  EXPECT_EQ(first.name, "9MiB");  // 8.96 MiB, in steps of 1 MiB above 8 MiB
  EXPECT_TRUE(std::isfinite(first.gbps));
  EXPECT_GT(first.gbps, 0);
  for (double g : {1001.0, 1002.0, 1003.0, 1004.0}) EXPECT_NE(first.gbps, g);
  MemoryLevel again = r.level_for(bytes - 1000);  // same footprint: not measured again
  EXPECT_EQ(again.capacity, first.capacity);
  EXPECT_EQ(again.gbps, first.gbps);
  EXPECT_GT(r.level_for(20e6).capacity, first.capacity);
}

// Measured again, a level keeps the faster of its rates: a loop slowed by a neighbour never
// lowers the ceiling, and a slow first loop does not leave it low.
TEST(Roofline, ALevelMeasuredAgainKeepsTheFasterRate) {
  Roofline r = fake_roofline();
  r.levels[1].probe_bytes = 64 << 10;
  r.levels[1].gbps = 1e-3;  // as if its first loop had met a neighbour
  const double measured = r.remeasure(100 << 10);
  EXPECT_TRUE(std::isfinite(measured));
  EXPECT_GT(measured, 1e-3);
  EXPECT_EQ(r.level_for(100 << 10).gbps, measured);
  r.levels[1].gbps = 1e12;  // faster than any loop
  EXPECT_LT(r.remeasure(100 << 10), 1e12);
  EXPECT_EQ(r.level_for(100 << 10).gbps, 1e12);
  EXPECT_EQ(r.level_for(1).gbps, 1001);  // the other levels untouched
  // A footprint between the last cache and DRAM, measured the first time by level_for.
  const double first = r.level_for(9.4e6).gbps;
  const double again = r.remeasure(9.4e6);
  EXPECT_EQ(r.level_for(9.4e6).gbps, std::max(first, again));
}

// The FMA peak measured again keeps the faster rate, as a level does.
TEST(Roofline, ThePeakMeasuredAgainKeepsTheFasterRate) {
  Roofline r = fake_roofline();
  r.peak_gflops = 1e-3;  // as if its first probe had met a neighbour
  const double measured = r.remeasure_peak();
  EXPECT_TRUE(std::isfinite(measured));
  EXPECT_GT(measured, 1e-3);
  EXPECT_EQ(r.peak_gflops, measured);
  r.peak_gflops = 1e12;  // faster than any probe
  EXPECT_LT(r.remeasure_peak(), 1e12);
  EXPECT_EQ(r.peak_gflops, 1e12);
  EXPECT_EQ(r.level_for(1).gbps, 1001);  // the levels untouched
}

// A faster peak found after the timings: each product row's roofline is min(peak, its
// memory term), so a row bound by its bytes keeps its roofline, one bound by the old peak
// rises to the new one or to its memory term; a row in GB/s keeps its roofline.
TEST(Roofline, AFasterPeakRaisesTheRowsItBoundedUpToTheirMemoryTerm) {
  auto row = [](double roofline, const char* unit) {
    Measurement m;
    m.roofline_gflops = roofline;
    m.unit = unit;
    return m;
  };
  std::vector<Measurement> rows = {row(100, "GFLOP/s"), row(100, "GFLOP/s"), row(40, "GFLOP/s"),
                                   row(90, "GB/s")};
  const double inf = std::numeric_limits<double>::infinity();
  apply_peak(rows, {1e6, 150, 40, inf}, 200);  // the old peak was 100
  EXPECT_EQ(rows[0].roofline_gflops, 200);     // compute-bound: the new peak
  EXPECT_EQ(rows[1].roofline_gflops, 150);     // now bound by its bytes
  EXPECT_EQ(rows[2].roofline_gflops, 40);      // bound by its bytes before and after
  EXPECT_EQ(rows[3].roofline_gflops, 90);      // a bandwidth, not a peak
  EXPECT_THROW(apply_peak(rows, {1, 2}, 300), std::logic_error);
}

// An operator that writes (a row operator) is bounded by a loop streaming its inputs into an
// output over its footprint, read and written bytes counted: named by the level that holds
// the data, measured there (none of the read loops' rates), once per footprint and number
// of inputs (the ratio of read to written bytes, 1 to 4).
TEST(Roofline, AnOperatorThatWritesIsBoundedByAStreamLoopOverItsFootprint) {
  Roofline r = fake_roofline();
  const MemoryLevel copy = r.stream_level(96 << 10, 96 << 10);
  EXPECT_EQ(copy.name, "L2");
  EXPECT_EQ(copy.capacity, 512 << 10);
  EXPECT_EQ(copy.probe_bytes, 192 << 10);  // the footprint, both directions
  EXPECT_TRUE(std::isfinite(copy.gbps));
  EXPECT_GT(copy.gbps, 0);
  for (double g : {1001.0, 1002.0, 1003.0, 1004.0}) EXPECT_NE(copy.gbps, g);
  EXPECT_EQ(r.stream_level(96 << 10, 96 << 10).gbps, copy.gbps);          // not measured again
  EXPECT_EQ(r.stream_level((96 << 10) - 100, 96 << 10).gbps, copy.gbps);  // same footprint
  // Two inputs into one output over a footprint of the same size: a loop of its own.
  const MemoryLevel add = r.stream_level(128 << 10, 64 << 10);
  EXPECT_EQ(add.probe_bytes, 192 << 10);
  EXPECT_NE(add.gbps, copy.gbps);
  EXPECT_GT(add.gbps, 0);
  EXPECT_EQ(r.stream_level(4 << 10, 4 << 10).name, "L1");
  // Beyond the caches: the level_for name of the footprint, its own loop.
  const MemoryLevel big = r.stream_level(6e6, 3e6);
  EXPECT_EQ(big.name, r.level_for(9e6).name);
  EXPECT_GE(double(big.probe_bytes), 9e6);
  EXPECT_GT(big.gbps, 0);
}

}  // namespace
}  // namespace dietcode::bench
