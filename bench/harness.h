// `dietcode bench`: this project's kernels beside the vendor libraries, in one run,
// interleaved so that machine drift hits all alike, each result checked against a
// float64 reference, each shape placed against the machine's measured roofline.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bench/roofline.h"
#include "runtime/module.h"
#include "schedule/micro_kernel.h"

namespace dietcode::bench {

struct BenchOptions {
  std::string workload = "bert-dense";
  std::vector<int64_t> t_values;  // sequence lengths (M for the dense layers)
  int threads = 1;
  std::vector<std::string> peers;  // empty: all
  std::string peers_dir;           // where the peer plugins are
  // Our candidates: these micro-kernels (validated per layer) instead of the sweep grid.
  std::vector<schedule::MicroKernelSchedule> kernels;
  // Tuned modules to measure (each as implementation "dietcode-<label>"), on the layers
  // whose operator they were tuned for. With modules and no kernels, no sweep runs
  // unless `sweep` is set (then it is "dietcode-sweep").
  std::vector<std::pair<std::string, runtime::ModuleSpec>> modules;
  bool sweep = true;
  double seconds_per_measurement = 0.05;  // target timed time per implementation and shape
  bool quiet = false;
};

// One measured (layer, implementation, shape).
struct Measurement {
  std::string workload;  // the layer's name
  std::string impl;      // "dietcode", "openblas", "onednn", "blis", "libxsmm"
  std::string variant;   // the peer's variant or our schedule (JSON)
  int threads = 1;
  int64_t t = 0, m = 0, n = 0, k = 0;
  double seconds = 0, gflops = 0, roofline_gflops = 0, max_rel_err = 0;
  std::string level;  // the memory level holding the data
};

struct BenchResult {
  Roofline roofline;
  std::vector<Measurement> rows;
  std::vector<std::string> notes;       // missing peers, unsupported shapes, ...
  std::vector<double> compile_seconds;  // JIT time of every kernel compiled
};

// Throws dietcode::Error for bad options (unknown workload, empty M list, ...).
BenchResult run_bench(const BenchOptions& options);

}  // namespace dietcode::bench
