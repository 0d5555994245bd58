// `dietcode bench` as one library call: inputs named by files (tuned modules, a file of
// schedules), the benchmark run, the table printed and the CSV and plot written.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "benchmark/harness.h"

namespace dietcode::bench {

struct BenchJob {
  BenchOptions options;                   // modules and kernels are filled from the files
  std::vector<std::string> module_paths;  // tuned module files, measured side by side
  std::string kernels_path;               // a file of schedules (JSON), one per line
  std::string csv_path, plot_path;        // empty: not written
  bool winners = false;                   // print the winning variant per shape
};

// Checks the output paths (before minutes of measurement), loads the inputs, runs the
// benchmark, prints the table (and the winners) on stdout, writes the CSV and the plot.
// Throws dietcode::Error for a bad input or output path.
BenchResult run_bench_job(BenchJob job);

// Tuned modules labelled for the table: by tuning mode ("joint", "per-shape") beside modules
// of another mode, else by the operator's name (a module tuned with --op, named "operator":
// by its file name), or by the file name when two share a name; modules whose labels would
// still be the same (run-a/qkv.module.json, run-b/qkv.module.json) by folder and name
// ("run-a/qkv"), else by path: every module has a label, and a column, of its own.
std::vector<std::pair<std::string, runtime::ModuleSpec>> load_labelled_modules(
    const std::vector<std::string>& paths);

// One schedule (JSON) per line; blank lines and lines starting with # are skipped.
std::vector<schedule::MicroKernelSchedule> read_kernel_file(const std::string& path);

}  // namespace dietcode::bench
