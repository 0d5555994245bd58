// Progress lines: an operator's own bar, and the bar across a whole model's tuning
// (WholeRun), whose count includes the budgets of the operators tuned before.
#include "tune/progress.h"

#include <gtest/gtest.h>

#include <string>

#include "codegen/llvm/target.h"
#include "tune/small_space.h"
#include "tune/tuner.h"

namespace dietcode::tune {
namespace {

std::string round_line(Progress& p, int trials) {
  testing::internal::CaptureStderr();
  for (int i = 0; i < trials; ++i) p.trial_done(i % 4 != 3);
  p.round_done("round  1", 10, 20);
  return testing::internal::GetCapturedStderr();
}

TEST(Progress, OperatorLineCountsTrialsAndErrors) {
  Progress p("[2/6] out", 40, false);
  const std::string line = round_line(p, 8);
  EXPECT_NE(line.find("[2/6] out round  1 ["), std::string::npos) << line;
  EXPECT_NE(line.find("8/40 trials"), std::string::npos) << line;
  EXPECT_NE(line.find("errors 2"), std::string::npos) << line;
  EXPECT_EQ(line.find("| all"), std::string::npos) << line;  // not part of a model
  EXPECT_EQ(line.back(), '\n');
}

TEST(Progress, WholeRunBarCountsThePartsBefore) {
  WholeRun whole;
  whole.total = 100;
  whole.before = 40;  // e.g. resumed in part: 25 of them ran in this process
  whole.ran_before = 25;
  Progress p("[3/4] ffn1", 30, false, "GFLOP/s", &whole);
  const std::string line = round_line(p, 10);
  EXPECT_NE(line.find("10/30 trials"), std::string::npos) << line;
  // 40 + 10 of 100: half the 16-wide bar.
  EXPECT_NE(line.find("| all [########........] 50/100"), std::string::npos) << line;
}

TEST(Progress, QuietPrintsNothing) {
  WholeRun whole;
  whole.total = 10;
  Progress p("x", 10, true, "GB/s", &whole);
  EXPECT_EQ(round_line(p, 3), "");
}

TEST(TrialBudget, SmallSpacesCapTheBudgetContractionsDoNot) {
  TuneOptions o;
  o.trials = 100000;
  o.op.op = "layer_norm";
  o.op.n = 768;
  o.op.m_min = 1;
  o.op.m_max = 128;
  const int64_t rows = trial_budget(o);
  EXPECT_GT(rows, 0);
  EXPECT_LT(rows, o.trials);  // the whole row space is far smaller
  EXPECT_EQ(rows, int64_t(SmallSpace(o.op, codegen::host_target().isa, 1).kernels().size()));
  o.op.op = "dense";
  o.op.k = 768;
  EXPECT_EQ(trial_budget(o), 100000);
  o.per_shape = true;
  o.trials_per_shape = 7;
  o.per_shape_m = {1, 5, 9};
  EXPECT_EQ(trial_budget(o), 21);
}

}  // namespace
}  // namespace dietcode::tune
