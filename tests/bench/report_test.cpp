// The bench table: shapes whose timings were disturbed in every attempt are marked, and
// each summary gives its figures without them too.
#include "benchmark/report.h"

#include <gtest/gtest.h>

#include <string>

namespace dietcode::bench {
namespace {

Measurement row(const std::string& impl, int64_t m, double seconds, bool disturbed) {
  Measurement r;
  r.workload = "layer";
  r.impl = impl;
  r.t = r.m = m;
  r.n = r.k = 64;
  r.seconds = seconds;
  r.gflops = 2.0 * double(m) * 64 * 64 / seconds * 1e-9;
  r.roofline_gflops = 100;
  r.level = "L1";
  r.disturbed = disturbed;
  return r;
}

BenchResult result() {
  BenchResult r;
  r.roofline.peak_gflops = 100;
  // M = 1 and 3 quiet (ours 2x and 1x the peer), M = 2 disturbed (ours 0.5x).
  const double ours[] = {1e-6, 4e-6, 1e-6}, theirs[] = {2e-6, 2e-6, 1e-6},
               sweep[] = {1e-6, 1e-6, 0.5e-6};
  for (int64_t m = 1; m <= 3; ++m) {
    const bool disturbed = m == 2;
    r.rows.push_back(row("dietcode-module", m, ours[m - 1], disturbed));
    r.rows.push_back(row("dietcode-sweep", m, sweep[m - 1], disturbed));
    r.rows.push_back(row("onednn", m, theirs[m - 1], disturbed));
  }
  return r;
}

TEST(BenchReport, DisturbedShapesAreMarkedAndLeftOutOfASecondSummary) {
  const std::string table = format_table(result());
  // The disturbed row alone carries the mark.
  size_t marks = 0;
  for (size_t at = table.find("  disturbed\n"); at != std::string::npos;
       at = table.find("  disturbed\n", at + 1))
    ++marks;
  EXPECT_EQ(marks, 1u) << table;
  EXPECT_NE(table.find("    2    64    64"), std::string::npos) << table;
  // Ours against the best peer: 2, 0.5, 1 -> geomean 1.00 (min 0.50); without M = 2:
  // 2 and 1 -> 1.41 (min 1.00) over 2.
  EXPECT_NE(table.find("layer module: geomean ratio to best peer 1.00 (min 0.50)"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("3 shapes; without the 1 disturbed: 1.41 (min 1.00) over 2\n"),
            std::string::npos)
      << table;
  // Ours against the sweep: 1, 0.25, 0.5 -> 0.500 (min 0.250 at M=2); without M = 2: 1 and
  // 0.5 -> 0.707 (min 0.500 at M=3).
  EXPECT_NE(table.find("layer: module vs sweep: geomean speed ratio 0.500 (min 0.250 at M=2) "
                       "over 3 shapes; without the 1 disturbed: 0.707 (min 0.500 at M=3)\n"),
            std::string::npos)
      << table;
}

TEST(BenchReport, AQuietRunHasNoSecondSummary) {
  BenchResult r = result();
  for (Measurement& m : r.rows) m.disturbed = false;
  const std::string table = format_table(r);
  EXPECT_EQ(table.find("disturbed"), std::string::npos) << table;
  EXPECT_NE(table.find("geomean ratio to best peer 1.00 (min 0.50), geomean roofline fraction"),
            std::string::npos)
      << table;
}

// Two modules given as `--module new --module baseline`: their columns, ratio columns and summary
// lines keep that order (in name order the baseline would come first), the first the reference of
// the other.
TEST(BenchReport, ModuleColumnsFollowTheOrderTheyWereGivenIn) {
  BenchResult r;
  r.roofline.peak_gflops = 100;
  r.ours = {"dietcode-new", "dietcode-baseline", "dietcode"};
  for (int64_t m = 1; m <= 2; ++m) {
    r.rows.push_back(row("dietcode-new", m, 1e-6, false));
    r.rows.push_back(row("dietcode-baseline", m, 2e-6, false));
    r.rows.push_back(row("onednn", m, 2e-6, false));
  }
  const std::string table = format_table(r);
  const size_t header = table.find("  M     N     K");
  ASSERT_NE(header, std::string::npos) << table;
  const std::string line = table.substr(header, table.find('\n', header) - header);
  EXPECT_LT(line.find(" new"), line.find(" baseline")) << line;
  EXPECT_LT(line.find("r.new"), line.find("r.base")) << line;
  EXPECT_LT(table.find("layer new: geomean"), table.find("layer baseline: geomean")) << table;
  // The baseline against the new module, the first given: half its speed.
  EXPECT_NE(table.find("layer: baseline vs new: geomean speed ratio 0.500"), std::string::npos)
      << table;
}

}  // namespace
}  // namespace dietcode::bench
