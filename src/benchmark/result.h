// What one benchmark run measured: the data `dietcode bench` prints and writes, the final
// table of `dietcode tune` and the tuning report read. Data only; the harness
// (harness.h) produces it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "benchmark/roofline.h"

namespace dietcode::bench {

// One measured (layer, implementation, shape).
struct Measurement {
  std::string workload;  // the layer's name
  std::string impl;      // "dietcode", "dietcode-<label>", "openblas", "onednn", "blis", "libxsmm"
  std::string variant;   // the peer's variant or our schedule (JSON)
  int threads = 1;
  int64_t t = 0, m = 0, n = 0, k = 0;
  // The rate is `unit`: GFLOP/s for products; GB/s (bytes moved once) for row operators,
  // where M and N are rows and row length and K is 0.
  double seconds = 0, gflops = 0, roofline_gflops = 0, max_rel_err = 0;
  std::string level;  // the memory level holding the data
  std::string unit = "GFLOP/s";
  bool cold_weights = false;  // timed with the weights in memory (BenchOptions::cold_weights)
  // The shape's rounds disagreed in every attempt (a neighbour took the core for part of
  // them): its ratios are less certain than the others'; the table marks it and the
  // summaries give the figures without such shapes too.
  bool disturbed = false;
};

struct BenchResult {
  Roofline roofline;
  std::vector<Measurement> rows;
  // Our implementations in the order the user named them: the modules as given, then the
  // sweep. The table's columns follow it (rows within a shape come in name order).
  std::vector<std::string> ours;
  std::vector<std::string> notes;       // missing peers, unsupported shapes, ...
  std::vector<double> compile_seconds;  // JIT time of every kernel compiled
};

}  // namespace dietcode::bench
