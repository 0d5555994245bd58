// Helpers shared by the tuner's tests: a module checked against float64, and the small
// prepacked micro-kernel the measurement tests time.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "codegen/llvm/target.h"
#include "ops/spec.h"
#include "reference/reference.h"
#include "runtime/module.h"
#include "schedule_support.h"
#include "tune/tuner.h"

namespace dietcode::testing {

// A fresh scratch folder per test (records, modules), removed after it.
class ScratchDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("dietcode-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_suite()->name()) + "-" +
            std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

// Runs the module on shape {M} with fresh random inputs against the float64 reference,
// output poisoned with NaN first; returns the relative error.
inline double module_error(const runtime::Module& m, int64_t M, std::mt19937_64& rng) {
  const te::Operator& op = m.op();
  std::vector<int64_t> sizes = op.buffer_sizes(op.bind({M}));
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<std::vector<float>> inputs;
  std::vector<const float*> pointers;
  std::vector<runtime::ConstTensor> args;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    inputs.emplace_back(sizes[i]);
    for (float& v : inputs.back()) v = dist(rng);
  }
  for (auto& in : inputs) {
    pointers.push_back(in.data());
    args.push_back({in.data(), int64_t(in.size())});
  }
  // Weights to pack: a contraction's second input (a row operator may have only one).
  runtime::PackedWeights packed;
  if (args.size() > 1) packed = m.prepack({M}, args[1]);
  std::vector<float> out(sizes.back(), std::numeric_limits<float>::quiet_NaN());
  m.run({M}, args, {out.data(), int64_t(out.size())}, &packed);
  return reference::relative_error(out.data(), reference::evaluate(op, {M}, pointers));
}

// dense N=96 K=64 over M = 1..40: the operator the measurement tests time kernels of.
inline ops::OperatorSpec small_dense_spec(const std::string& epilogue = "none") {
  ops::OperatorSpec op;
  op.op = "dense";
  op.n = 96;
  op.k = 64;
  op.m_min = 1;
  op.m_max = 40;
  op.epilogue = epilogue;
  return op;
}

// A tuning run small enough for a test: dense N=80 (not a multiple of 16: edge tiles in N
// too) K=48 over M = 1..24, a small population, short measurements, records in `dir`;
// the finals sample `finalists.shapes` shapes without the dense share of the smallest.
inline tune::TuneOptions small_tune_options(const std::filesystem::path& dir, int64_t trials) {
  tune::TuneOptions o;
  o.op.op = "dense";
  o.op.n = 80;
  o.op.k = 48;
  o.op.m_min = 1;
  o.op.m_max = 24;
  o.trials = trials;
  o.records_path = (dir / "records.jsonl").string();
  o.search.population = 96;
  o.search.generations = 2;
  o.search.measure_per_round = 16;
  o.measure.worker_path = DIETCODE_WORKER_PATH;
  o.measure.seconds_per_repeat = 0.0005;
  o.measure.side_by_side_seconds_per_repeat = 0.0005;
  o.measure.warmup_seconds = 0.0005;
  o.measure.repeats = 3;
  o.finalists.dense = 0;  // the finals' windows as `finalists.shapes` says (tests set 4)
  o.quiet = true;
  return o;
}

// An mr x (one vector) tile with B prepacked, for the host's ISA.
inline schedule::MicroKernelSchedule prepacked_kernel(int64_t mr) {
  const schedule::Isa isa = codegen::host_target().isa;
  auto s = make_schedule(isa, mr, schedule::vector_isa(isa).width, 32, mr * 2, 32);
  s.pack_b = schedule::PackB::Prepacked;
  return s;
}

}  // namespace dietcode::testing
