// Measurement that cannot be fooled or stopped. Candidates are compiled and timed in
// separate worker processes (the `dietcode-worker` executable), so a kernel that
// crashes or hangs costs one record marked as an error, never the tuning run:
//
//   parent (Measurer)                          workers (measure_worker_main)
//   batch split over W workers  -- compile --> each compiles its share (in parallel)
//   one worker at a time        -- measure --> first run checked against the float64
//                                              reference (output poisoned first), then
//                                              warm-up + repeated bursts; the bursts'
//                                              min, median and inter-quartile spread;
//                                              a disturbed attempt (spread beyond
//                                              `disturbed_spread`) is timed again, at
//                                              most `max_attempts` times, else marked
//   side by side (finalists)    -- measure_set --> several kernels on one shape, each
//                                              checked, then timed in interleaved rounds
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
#include "schedule/any_schedule.h"
#include "tune/records.h"

namespace dietcode::tune {

struct MeasureRequest {
  schedule::AnySchedule schedule;
  std::vector<int64_t> shape;
  // Tests only (needs allow_faults): "crash", "hang", "wrong", "slow" (every other
  // burst of every attempt sleeps: always disturbed) or "slow-once" (the first attempt
  // only: disturbed, then re-measured clean); side by side also "slow-first" (every
  // burst of the window's first kernel sleeps: far behind, out of the race) and
  // "jumpy-first" (the same, every other burst slower still: disturbed as well).
  std::string fault;
};

struct MeasureResult {
  double seconds = 0;   // time of one call, by MeasureOptions::estimator
  double gflops = 0;    // in the operator's unit (ops/work.h): GB/s for a row operator
  TimingSpread timing;  // the bursts behind `seconds`
  double max_rel_err = 0;
  double compile_seconds = 0;
  std::string error;  // empty: compiled, correct and timed
};

// Which statistic of the timing bursts is a measurement's figure. Min: on a shared
// machine noise only ever adds time, so the fastest burst is the least disturbed one
// (evidence in src/tune/README.md, "Which estimator").
enum class Estimator : uint8_t { Min, Median };

// Interleaved rounds of a side-by-side window before its race drops the kernels far
// behind (MeasureOptions::race_margin).
constexpr int kRaceRounds = 3;

struct MeasureOptions {
  std::string worker_path;           // the dietcode-worker executable
  int workers = 2;                   // processes compiling in parallel
  int threads = 1;                   // threads of each timed kernel
  double compile_timeout = 60;       // seconds per kernel
  double measure_timeout = 30;       // seconds per measurement (check + timing)
  double seconds_per_repeat = 0.01;  // timed time per repeat burst
  int repeats = 7;                   // bursts per attempt
  // Side by side (measure_side_by_side) each kernel's bursts are shorter: the rounds are
  // interleaved, so drift hits every kernel of the window alike, and a window of eleven
  // kernels on 25 shapes is a third of a 1000-trial run's finals otherwise. The fastest of
  // 7 bursts of 5 ms varied as little as of 10 ms (src/tune/README.md, "Which estimator").
  double side_by_side_seconds_per_repeat = 0.005;
  // Untimed calls before the bursts, which also size them (at least one call). The
  // correctness check has already run the kernel once, and the fastest burst is the
  // figure, so a first burst still warming up does not count.
  double warmup_seconds = 0.002;
  Estimator estimator = Estimator::Min;
  // An attempt whose bursts' inter-quartile range exceeds this fraction of their median
  // was disturbed (a neighbour took the core for part of it): it is timed again, up to
  // `max_attempts` in all, keeping the least spread attempt; if every attempt was
  // disturbed the result is marked so (TimingSpread::disturbed) and not learned from.
  double disturbed_spread = 0.25;
  int max_attempts = 3;
  // Side by side, a race: after kRaceRounds interleaved rounds, a kernel whose fastest
  // burst is more than this fraction slower than the window's fastest is timed no further
  // in the attempt (its figures come from the bursts it had; TimingSpread::bursts says how
  // many), and after each later round the margin narrows (by (kRaceRounds / rounds)^2:
  // 10%, 5.6%, 3.6%, 2.5%); once one kernel is left the window ends. The windows decide
  // which kernel runs a shape, and one that far behind does not win it: the crosscheck's
  // eleven kernels on a shape are mostly 10-25% apart. 0: every kernel timed in every round.
  double race_margin = 0.10;
  // Time each call on the next of a ring of copies of the operator's constant inputs
  // (weights, packed or not; 192 MB in all), so each call meets its weights in DRAM after
  // the other copies streamed through the caches: how a model's layers run, whose weights
  // together are larger than the caches. Kernels are then ranked by how fast they stream
  // their weights from DRAM, not from cache.
  bool cold_weights = false;
  double tolerance = 1e-4;    // relative error allowed against the reference
  bool allow_faults = false;  // tests: honour MeasureRequest::fault
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
  // Several kernels on one shape in the same time window: each is checked against the
  // float64 reference, then `repeats` rounds cycle through them (a warm call, then a
  // timed burst each), so machine drift hits all alike; each kernel's figure is its
  // estimator over its rounds. Kernels stay compiled in the worker between calls (keyed
  // by schedule), so finalists met again on another shape are not compiled twice.
  // A window whose rounds were disturbed is timed again, as in measure(). A kernel far
  // behind after kRaceRounds rounds is timed no further (MeasureOptions::race_margin).
  std::vector<MeasureResult> measure_side_by_side(const std::vector<schedule::AnySchedule>& kernels,
                                                  const std::vector<int64_t>& shape,
                                                  const std::string& fault = "");

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The worker's main loop: requests on `in_fd`, replies on `out_fd`, one JSON per line.
int measure_worker_main(int argc, char** argv);

}  // namespace dietcode::tune
