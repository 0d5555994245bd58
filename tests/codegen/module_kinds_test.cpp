// Modules of every schedule kind: a module of row kernels (LayerNorm) and one of fused
// attention kernels go through the module file and the runtime like a contraction's:
// saved, loaded, compiled with their dispatcher, and run on every kind of shape (1,
// primes, past the declared range) against the float64 reference with poisoned outputs.
// A kernel of the wrong kind for the operator is refused with a message naming it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "codegen/llvm/target.h"
#include "reference/reference.h"
#include "runtime/module.h"
#include "support/error.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;

// Two kernels, M <= split to the first, the rest to the second.
runtime::ModuleSpec two_kernel_module(const ops::OperatorSpec& op, schedule::AnySchedule a,
                                      schedule::AnySchedule b, int64_t split) {
  runtime::ModuleSpec m;
  m.op = op;
  m.isa = codegen::host_target().isa;
  schedule::set_isa(a, m.isa);
  schedule::set_isa(b, m.isa);
  m.kernels = {a, b};
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int> labels;
  for (int64_t M = op.m_min; M <= op.m_max; ++M) {
    shapes.push_back({M});
    labels.push_back(M <= split ? 0 : 1);
  }
  m.dispatch = dispatch::DecisionTree::fit(shapes, labels);
  return m;
}

// The module's output at M against float64, inputs random, output poisoned with NaN.
double module_error(const runtime::Module& m, int64_t M, std::mt19937_64& rng) {
  std::vector<int64_t> sizes = m.op().buffer_sizes(m.op().bind({M}));
  std::normal_distribution<float> dist(0, 1);
  std::vector<std::vector<float>> inputs;
  std::vector<runtime::ConstTensor> args;
  std::vector<const float*> pointers;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    inputs.emplace_back(sizes[i]);
    for (float& v : inputs.back()) v = dist(rng);
    pointers.push_back(inputs.back().data());
  }
  for (const auto& in : inputs) args.push_back({in.data(), int64_t(in.size())});
  std::vector<float> out(sizes.back(), std::numeric_limits<float>::quiet_NaN());
  m.run({M}, args, {out.data(), int64_t(out.size())});
  return reference::relative_error(out.data(), reference::evaluate(m.op(), {M}, pointers));
}

class ModuleKindsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dietcode-module-kinds-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Saved, loaded, compiled; every shape checked.
  void check_round_trip(const runtime::ModuleSpec& spec) {
    std::string path = (dir_ / "m.json").string();
    runtime::save_module_spec(spec, path);
    runtime::ModuleSpec loaded = runtime::load_module_spec(path);
    ASSERT_EQ(loaded.kernels, spec.kernels);
    runtime::Module m = runtime::Module::compile(loaded);
    std::mt19937_64 rng(7);
    for (int64_t M : {1, 2, 7, 13, 16, 31, 32, 33, 129, 200})
      EXPECT_LT(module_error(m, M, rng), 1e-5) << "M=" << M << " kernel " << m.select({M});
  }

  fs::path dir_;
};

TEST_F(ModuleKindsTest, RowOperatorModule) {
  ops::OperatorSpec op;
  op.op = "layer_norm";
  op.n = 77;  // not a multiple of the vector width
  op.m_min = 1;
  op.m_max = 64;
  schedule::RowSchedule a, b;
  a.rows_per_task = 1;
  a.unroll = 1;
  a.passes = schedule::ReductionPasses::Separate;
  b.rows_per_task = 8;
  b.unroll = 4;
  check_round_trip(two_kernel_module(op, a, b, 16));
}

TEST_F(ModuleKindsTest, AttentionModule) {
  ops::OperatorSpec op;
  op.op = "attention";
  op.batch = 2;
  op.n = 3;   // heads
  op.k = 20;  // head size, not a multiple of the vector width
  op.mask = true;
  op.m_min = 1;
  op.m_max = 64;
  schedule::AttentionSchedule a, b;
  a.query_tile = 4;
  a.key_block = 8;
  a.unroll = 2;
  a.parallel = schedule::AttentionParallel::Heads;
  b.query_tile = 16;
  b.key_block = 32;
  b.unroll = 4;
  b.parallel = schedule::AttentionParallel::HeadsAndQueryTiles;
  check_round_trip(two_kernel_module(op, a, b, 12));
}

TEST_F(ModuleKindsTest, KernelOfTheWrongKindIsRefused) {
  ops::OperatorSpec op;
  op.op = "softmax";
  op.n = 33;
  op.m_min = 1;
  op.m_max = 8;
  runtime::ModuleSpec m =
      two_kernel_module(op, schedule::RowSchedule{}, schedule::RowSchedule{}, 4);
  nlohmann::json j = runtime::to_json(m);
  schedule::MicroKernelSchedule contraction;
  contraction.isa = m.isa;
  j["kernels"][1] = schedule::to_json(contraction);
  try {
    runtime::module_spec_from_json(j, "m.json");
    FAIL() << "a contraction schedule in a softmax module was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kernels[1] is a contraction schedule but a softmax "
                                         "operator takes row schedules"),
              std::string::npos)
        << e.what();
  }
  j["kernels"][1] = {{"kind", "tiles"}};
  EXPECT_THROW(runtime::module_spec_from_json(j, "m.json"), Error);
}

TEST_F(ModuleKindsTest, AttentionKernelsRefitToNarrowerVectors) {
  // An AVX-512 attention module whose tile needs more AVX2 registers than there are:
  // retargeting shrinks the unroll (then the tile) until the accumulators fit.
  ops::OperatorSpec op;
  op.op = "attention";
  op.n = 2;
  op.k = 16;
  op.m_min = 1;
  op.m_max = 32;
  schedule::AttentionSchedule s;
  s.isa = schedule::Isa::Avx512;
  s.query_tile = 32;  // 2 vectors of 16 lanes; 4 of 8 on AVX2
  s.unroll = 7;       // (7 + 1) * 2 = 16 <= 32 registers; (7 + 1) * 4 = 32 > 16
  runtime::ModuleSpec m;
  m.op = op;
  m.isa = schedule::Isa::Avx512;
  m.kernels = {s};
  m.dispatch = dispatch::DecisionTree::fit({{1}}, {0});
  runtime::ModuleSpec avx2 = runtime::retarget(m, schedule::Isa::Avx2);
  const auto& t = std::get<schedule::AttentionSchedule>(avx2.kernels[0]);
  EXPECT_EQ(t.isa, schedule::Isa::Avx2);
  EXPECT_NO_THROW(schedule::validate(t));
  EXPECT_EQ(t.query_tile, 32);
  EXPECT_EQ(t.unroll, 3);  // (3 + 1) * 4 = 16
}

}  // namespace
}  // namespace dietcode
