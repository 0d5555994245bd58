// Decision trees (dispatch::decision_tree_from_json, the "dispatch" field of a module)
// for a module of kNumKernels kernels. The input is JSON text; bytes that are not JSON
// are skipped (the module target covers the parser). An accepted tree must survive a
// round trip, reach a valid kernel for every shape, and describe itself.
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dispatch/decision_tree.h"
#include "fuzz/fuzz_support.h"
#include "support/error.h"

namespace {

constexpr int kNumKernels = 4;
// Trees over more shape variables are checked for structure only: select() and
// describe() take one value or name per variable.
constexpr int kMaxVarsToEvaluate = 16;

using dietcode::dispatch::DecisionTree;
using dietcode::fuzz::must;

void check_select(const DecisionTree& t, const std::vector<int64_t>& shape) {
  int k = must([&] { return t.select(shape); }, "select");
  FUZZ_CHECK(k >= 0 && k < kNumKernels, "a shape dispatches to kernel " + std::to_string(k));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  DecisionTree t;
  try {
    t = dietcode::dispatch::decision_tree_from_json(j, kNumKernels);
  } catch (const dietcode::Error&) {
    return 0;
  }
  nlohmann::json out = must([&] { return dietcode::dispatch::to_json(t); }, "to_json");
  DecisionTree again = must(
      [&] { return dietcode::dispatch::decision_tree_from_json(out, kNumKernels); }, "round trip");
  FUZZ_CHECK(dietcode::dispatch::to_json(again) == out, "the tree changed in a round trip");
  int depth = must([&] { return t.depth(); }, "depth");
  int leaves = must([&] { return t.num_leaves(); }, "num_leaves");
  FUZZ_CHECK(depth >= 0 && depth < static_cast<int>(t.nodes.size()), "depth out of range");
  FUZZ_CHECK(2 * leaves == static_cast<int>(t.nodes.size()) + 1, "not a binary tree");
  if (t.num_vars > kMaxVarsToEvaluate) return 0;

  std::vector<std::string> names;
  for (int v = 0; v < t.num_vars; ++v) names.push_back("v" + std::to_string(v));
  must([&] { return t.describe(names); }, "describe");
  // Both sides of every cut, and the extremes.
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  check_select(t, std::vector<int64_t>(t.num_vars, lo));
  check_select(t, std::vector<int64_t>(t.num_vars, hi));
  for (const dietcode::dispatch::DecisionNode& n : t.nodes) {
    if (n.var < 0) continue;
    std::vector<int64_t> shape(t.num_vars, n.threshold);
    check_select(t, shape);
    if (n.threshold < hi) {
      for (int64_t& v : shape) ++v;
      check_select(t, shape);
    }
  }
  return 0;
}
