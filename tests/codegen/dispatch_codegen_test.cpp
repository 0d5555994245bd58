// The compiled dispatcher against the interpreter (DecisionTree::select) on every shape
// of a range and on random shapes far outside the samples, including 0 and negatives.
#include "dispatch/dispatch_codegen.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "codegen/llvm/target.h"
#include "test_support.h"

using namespace dietcode;
using dispatch::DecisionTree;

namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Labels for M = 1..128 in runs of random lengths.
DecisionTree one_dimensional_tree(unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int> labels;
  int label = 0;
  for (int64_t m = 1; m <= 128; ++m) {
    if (rng() % 12 == 0) label = static_cast<int>(rng() % 6);
    shapes.push_back({m});
    labels.push_back(label);
  }
  return DecisionTree::fit(shapes, labels);
}

// Random distinct samples in [1, 64]^2 with labels by region, plus noise.
DecisionTree two_dimensional_tree(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> value(1, 64);
  std::set<std::vector<int64_t>> distinct;
  while (distinct.size() < 200) distinct.insert({value(rng), value(rng)});
  std::vector<std::vector<int64_t>> shapes(distinct.begin(), distinct.end());
  std::vector<int> labels;
  for (const auto& s : shapes)
    labels.push_back(rng() % 8 == 0 ? 5 : static_cast<int>((s[0] / 20 + 3 * (s[1] / 30)) % 5));
  return DecisionTree::fit(shapes, labels);
}

}  // namespace

TEST(DispatchCodegen, OneVariableAgreesWithTheInterpreterOnEveryShape) {
  for (unsigned seed = 0; seed < 10; ++seed) {
    DecisionTree t = one_dimensional_tree(seed);
    auto compiled = dispatch::jit_compile_dispatcher(t);
    for (int64_t m = -5; m <= 2000; ++m)
      ASSERT_EQ(compiled->select(&m), t.select(&m)) << "seed " << seed << ", M = " << m;
    for (int64_t m : {kMin, kMin + 1, int64_t{-1} << 40, int64_t{1} << 40, kMax - 1, kMax})
      ASSERT_EQ(compiled->select(&m), t.select(&m)) << "seed " << seed << ", M = " << m;
  }
}

TEST(DispatchCodegen, TwoVariablesAgreeWithTheInterpreterOnRandomShapes) {
  for (unsigned seed = 0; seed < 10; ++seed) {
    DecisionTree t = two_dimensional_tree(seed);
    auto compiled = dispatch::jit_compile_dispatcher(t);
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int64_t> near(-3, 80), far(-1000000, 1000000);
    const std::vector<int64_t> extremes{kMin, -1, 0, 1, kMax};
    for (int i = 0; i < 20000; ++i) {
      int64_t shape[2];
      for (int64_t& v : shape) {
        switch (rng() % 3) {
          case 0:
            v = near(rng);
            break;
          case 1:
            v = far(rng);
            break;
          default:
            v = extremes[rng() % extremes.size()];
        }
      }
      ASSERT_EQ(compiled->select(shape), t.select(shape))
          << "seed " << seed << ", shape " << shape[0] << "x" << shape[1];
    }
  }
}

TEST(DispatchCodegen, SingleLeafAndHandWrittenTrees) {
  DecisionTree leaf = DecisionTree::fit({{3}}, {4});
  int64_t m = 99;
  EXPECT_EQ(dispatch::jit_compile_dispatcher(leaf)->select(&m), 4);
  // Thresholds that disagree (an unreachable leaf) and extreme thresholds compile as written.
  DecisionTree t = dispatch::decision_tree_from_json(nlohmann::json::parse(R"({"num_vars": 2,
      "nodes": [{"var": 1, "threshold": -9223372036854775808, "left": 1, "right": 2},
                {"kernel": 7},
                {"var": 0, "threshold": 10, "left": 3, "right": 4},
                {"var": 0, "threshold": 20, "left": 5, "right": 6},
                {"kernel": 2}, {"kernel": 0}, {"kernel": 1}]})"),
                                                     8);
  auto compiled = dispatch::jit_compile_dispatcher(t);
  for (int64_t a : {kMin, int64_t{-5}, int64_t{0}, int64_t{10}, int64_t{11}, int64_t{25}, kMax})
    for (int64_t b : {kMin, kMin + 1, int64_t{0}, kMax}) {
      int64_t shape[2] = {a, b};
      EXPECT_EQ(compiled->select(shape), t.select(shape)) << "shape " << a << "x" << b;
    }
}

TEST(DispatchCodegen, DeepChainCompiles) {
  // A 3000-compare chain: the emitter walks the nodes in a loop, not by recursion.
  nlohmann::json nodes = nlohmann::json::array();
  constexpr int kInternal = 3000;
  for (int i = 0; i < kInternal; ++i) {
    nodes.push_back({{"var", 0}, {"threshold", 2 * i}, {"left", 2 * i + 1}, {"right", 2 * i + 2}});
    nodes.push_back({{"kernel", i % 5}});
  }
  nodes.push_back({{"kernel", 5}});
  DecisionTree t = dispatch::decision_tree_from_json({{"num_vars", 1}, {"nodes", nodes}}, 6);
  auto compiled = dispatch::jit_compile_dispatcher(t);
  for (int64_t m = -3; m <= 2 * kInternal + 3; ++m)
    ASSERT_EQ(compiled->select(&m), t.select(&m)) << "M = " << m;
}

TEST(DispatchCodegen, ManyDispatchersLiveAndDieIndependently) {
  std::vector<std::unique_ptr<dispatch::CompiledDispatcher>> live;
  for (unsigned seed = 0; seed < 40; ++seed)
    live.push_back(dispatch::jit_compile_dispatcher(one_dimensional_tree(seed)));
  live.erase(live.begin(), live.begin() + 20);  // frees their code
  for (unsigned i = 0; i < live.size(); ++i) {
    DecisionTree t = one_dimensional_tree(20 + i);
    for (int64_t m = 0; m <= 130; ++m)
      ASSERT_EQ(live[i]->select(&m), t.select(&m)) << "seed " << 20 + i << ", M = " << m;
  }
}

TEST(DispatchCodegen, RefusesAMalformedTree) {
  DecisionTree t;
  t.num_vars = 1;
  t.nodes.resize(3);
  t.nodes[0] = {.var = 0, .threshold = 4, .left = 1, .right = 5};
  t.nodes[1].kernel = t.nodes[2].kernel = 0;
  EXPECT_USER_ERROR(dispatch::jit_compile_dispatcher(t), "node 0: field 'right' is 5");
  EXPECT_USER_ERROR(dispatch::jit_compile_dispatcher(DecisionTree{}), "no nodes");
}

TEST(DispatchCodegen, LlvmIrIsCompareAndBranch) {
  DecisionTree t = DecisionTree::fit({{1}, {8}, {16}, {32}}, {0, 1, 2, 1});
  for (schedule::Isa isa : {schedule::Isa::Avx2, schedule::Isa::Avx512}) {
    std::string ir = dispatch::dispatcher_llvm_ir(t, codegen::target_for_isa(isa));
    EXPECT_NE(ir.find("define i32 @select(ptr"), std::string::npos) << ir;
    EXPECT_NE(ir.find("icmp sle i64"), std::string::npos) << ir;
    EXPECT_NE(ir.find("br i1"), std::string::npos) << ir;
    EXPECT_NE(ir.find("ret i32 2"), std::string::npos) << ir;
    EXPECT_NE(ir.find("target datalayout"), std::string::npos) << ir;
  }
}
