// Measurement that cannot be fooled or stopped. Candidates are compiled and timed in
// separate worker processes (the `dietcode-worker` executable), so a kernel that
// crashes or hangs costs one record marked as an error, never the tuning run:
//
//   parent (Measurer)                          workers (measure_worker_main)
//   batch split over W workers  -- compile --> each compiles its share (in parallel)
//   one worker at a time        -- measure --> first run checked against the float64
//                                              reference (output poisoned first), then
//                                              warm-up + repeated bursts, median
//   timeout / EOF / bad reply   --> error record, worker restarted, batch goes on
//
// Timing runs on one worker at a time while the others wait, so the cores it uses
// are quiet (compilation of the batch happens before, in parallel).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ops/spec.h"
#include "schedule/micro_kernel.h"

namespace dietcode::tune {

struct MeasureRequest {
  schedule::MicroKernelSchedule schedule;
  std::vector<int64_t> shape;
  std::string fault;  // tests only: "crash", "hang" or "wrong" (needs allow_faults)
};

struct MeasureResult {
  double seconds = 0;  // median time of one call
  double gflops = 0;
  double max_rel_err = 0;
  double compile_seconds = 0;
  std::string error;  // empty: compiled, correct and timed
};

struct MeasureOptions {
  std::string worker_path;       // the dietcode-worker executable
  int workers = 2;               // processes compiling in parallel
  int threads = 1;               // threads of each timed kernel
  double compile_timeout = 60;   // seconds per kernel
  double measure_timeout = 30;   // seconds per measurement (check + timing)
  double seconds_per_repeat = 0.01;  // timed time per repeat burst
  int repeats = 7;               // bursts; the median call time is reported
  double tolerance = 1e-4;       // relative error allowed against the reference
  bool allow_faults = false;     // tests: honour MeasureRequest::fault
};

// Where dietcode-worker is: $DIETCODE_WORKER, else beside this executable.
std::string default_worker_path();

class Measurer {
 public:
  Measurer(const ops::OperatorSpec& op, const MeasureOptions& options);
  ~Measurer();
  // Results in request order; `on_result(i, result)` is called as each one is final.
  std::vector<MeasureResult> measure(
      const std::vector<MeasureRequest>& batch,
      const std::function<void(size_t, const MeasureResult&)>& on_result = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The worker's main loop: requests on `in_fd`, replies on `out_fd`, one JSON per line.
int measure_worker_main(int argc, char** argv);

}  // namespace dietcode::tune
