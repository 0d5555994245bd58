#include "tune/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

namespace dietcode::tune {

namespace {

std::string duration_text(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", int(s) / 60, int(s) % 60);
  return fmt::format("{}h{:02d}m", int(s) / 3600, (int(s) % 3600) / 60);
}

std::string bar(int64_t done, int64_t total, int width) {
  int filled = total > 0 ? int(double(width) * double(done) / double(total)) : width;
  filled = std::clamp(filled, 0, width);
  return std::string(filled, '#') + std::string(width - filled, '.');
}

}  // namespace

Progress::Progress(std::string label, int64_t budget, bool quiet, std::string unit,
                   const WholeRun* whole)
    : label_(std::move(label)),
      budget_(budget),
      quiet_(quiet),
      tty_(::isatty(2) == 1),
      unit_(std::move(unit)),
      whole_(whole) {}

void Progress::resume(int64_t trials, int64_t errors) {
  done_ += trials;
  done_at_start_ += trials;
  errors_ += errors;
}

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::trial_done(bool ok) {
  ++done_;
  if (!ok) ++errors_;
  if (tty_ && !last_step_.empty()) draw(false);
}

void Progress::round_done(const std::string& step, double best_predicted, double best_measured) {
  last_predicted_ = best_predicted;
  last_measured_ = best_measured;
  last_step_ = step;
  draw(true);
}

void Progress::draw(bool end_line) const {
  if (quiet_) return;
  std::string what = label_.empty() ? last_step_ : label_ + " " + last_step_;
  double elapsed = elapsed_seconds();
  int64_t run = done_ - done_at_start_;
  double eta = run > 0 ? elapsed / double(run) * double(budget_ - done_) : 0;
  // The whole run: trials done (resumed or run) of all budgets; its ETA from the rate of
  // the trials run in this process.
  std::string whole;
  if (whole_ && whole_->total > 0) {
    const int64_t whole_done = std::min(whole_->before + done_, whole_->total);
    const int64_t whole_run = whole_->ran_before + run;
    const double whole_elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - whole_->start).count();
    const double whole_eta =
        whole_run > 0 ? whole_elapsed / double(whole_run) * double(whole_->total - whole_done) : 0;
    whole = fmt::format("  | all [{}] {}/{}  ETA {}", bar(whole_done, whole_->total, 16),
                        whole_done, whole_->total, duration_text(whole_eta));
  }
  fmt::print(stderr,
             "{}{} [{}] {}/{} trials  {} elapsed  ETA {}  geomean best: predicted {}, "
             "measured {} {}  errors {}{}{}",
             tty_ ? "\r\033[K" : "", what, bar(done_, budget_, 24), done_, budget_,
             duration_text(elapsed), duration_text(eta),
             last_predicted_ > 0 ? fmt::format("{:.1f}", last_predicted_) : "-",
             last_measured_ > 0 ? fmt::format("{:.1f}", last_measured_) : "-", unit_, errors_,
             whole, end_line || !tty_ ? "\n" : "");
}

}  // namespace dietcode::tune
