// Progress of a tuning run on stderr: trials done of the budget, elapsed time, ETA,
// the best predicted and measured geomean GFLOP/s, errors. One line per round; on a
// terminal the line is also redrawn after every trial. A run that is one operator of a
// model's tuning also shows a bar across the whole model (WholeRun).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace dietcode::tune {

// The whole tuning run this one is a part of (a model's operators tuned one after the
// other): the budgets of all its parts, of the parts before this one, the trials those ran
// in this process, and when the whole run started.
struct WholeRun {
  int64_t total = 0;       // trials of every part's budget
  int64_t before = 0;      // trials of the budgets of the parts before this one
  int64_t ran_before = 0;  // trials those parts ran in this process (not resumed)
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

class Progress {
 public:
  // `unit`: of the speeds shown (GB/s for a row operator).
  Progress(std::string label, int64_t budget, bool quiet, std::string unit = "GFLOP/s",
           const WholeRun* whole = nullptr);

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
  const WholeRun* whole_ = nullptr;
};

}  // namespace dietcode::tune
