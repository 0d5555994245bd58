// The learned cost model's quality on real measurements: 600 micro-kernels drawn at
// random from the shape-generic space for the BERT dense layer N=2304, K=768,
// M = 1..128, each measured at its S* (one thread, AVX-512 host; records in
// tests/data). Held-out: the kernels whose schedule hashes to 0 mod 5.
#include <gtest/gtest.h>

#include "tune/tuner.h"

namespace dietcode::tune {
namespace {

TEST(CostModel, RanksHeldOutMicroKernels) {
  std::vector<TuningRecord> records =
      read_records_any_machine(DIETCODE_TEST_DATA "/records_dense_2304x768_random600.jsonl");
  ASSERT_EQ(records.size(), 600u);
  ops::OperatorSpec op;
  op.op = "dense";
  op.n = 2304;
  op.k = 768;
  op.m_min = 1;
  op.m_max = 128;
  ModelEvaluation e = evaluate_cost_model(op, 1, records);
  EXPECT_GE(e.train, 400u);
  EXPECT_GE(e.test, 80u);
  // The aim: >= 0.85 pairwise ranking accuracy after 500 measurements.
  EXPECT_GE(e.accuracy, 0.85) << "trained on " << e.train << ", tested on " << e.test;
  // A model trained on fewer records is worse (the accuracy is learned, not given).
  std::vector<TuningRecord> few(records.begin(), records.begin() + 120);
  ModelEvaluation small = evaluate_cost_model(op, 1, few);
  EXPECT_LT(small.accuracy, e.accuracy);
}

}  // namespace
}  // namespace dietcode::tune
