// Helpers shared by the tuner's tests: a module checked against float64, and the small
// prepacked micro-kernel the measurement tests time.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <limits>
#include <string>
#include <random>
#include <vector>

#include "codegen/llvm/target.h"
#include "reference/reference.h"
#include "runtime/module.h"
#include "schedule_support.h"

namespace dietcode::testing {

// A fresh scratch folder per test (records, modules), removed after it.
class ScratchDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("dietcode-" + std::string(::testing::UnitTest::GetInstance()->current_test_suite()->name()) +
            "-" + std::to_string(::getpid()) + "-" +
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
  runtime::PackedWeights packed = m.prepack({M}, args[1]);
  std::vector<float> out(sizes.back(), std::numeric_limits<float>::quiet_NaN());
  m.run({M}, args, {out.data(), int64_t(out.size())}, &packed);
  return reference::relative_error(out.data(), reference::evaluate(op, {M}, pointers));
}

// An mr x (one vector) tile with B prepacked, for the host's ISA.
inline schedule::MicroKernelSchedule prepacked_kernel(int64_t mr) {
  const schedule::Isa isa = codegen::host_target().isa;
  auto s = make_schedule(isa, mr, schedule::vector_isa(isa).width, 32, mr * 2, 32);
  s.pack_b = schedule::PackB::Prepacked;
  return s;
}

}  // namespace dietcode::testing
