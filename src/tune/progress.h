// Progress of a tuning run on stderr: trials done of the budget, elapsed time, ETA,
// the best predicted and measured geomean GFLOP/s, errors. One line per round; on a
// terminal the line is also redrawn after every trial.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace dietcode::tune {

class Progress {
 public:
  // `unit`: of the speeds shown (GB/s for a row operator).
  Progress(std::string label, int64_t budget, bool quiet, std::string unit = "GFLOP/s");

  // Trials already in the records when the run starts (resumed).
  void resume(int64_t trials, int64_t errors);
  void trial_done(bool ok);
  // Ends a round: `step` names it ("round  3", "M= 17").
  void round_done(const std::string& step, double best_predicted, double best_measured);

  int64_t done() const { return done_; }
  int64_t done_at_start() const { return done_at_start_; }
  int64_t errors() const { return errors_; }
  double elapsed_seconds() const;

 private:
  void draw(bool end_line) const;

  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::string label_;
  int64_t budget_ = 0, done_at_start_ = 0, done_ = 0, errors_ = 0;
  bool quiet_ = false, tty_ = false;
  // The last round's figures, repeated while the next round's trials complete.
  double last_predicted_ = 0, last_measured_ = 0;
  std::string last_step_;
  std::string unit_;
};

}  // namespace dietcode::tune
