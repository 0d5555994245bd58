// The dispatch decision tree as data: fitting is exact and shallow, shapes off the samples
// go where the header says, JSON round-trips, and malformed JSON is refused by name.
#include "dispatch/decision_tree.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "test_support.h"

using namespace dietcode;
using dispatch::DecisionTree;
using json = nlohmann::json;

namespace {

// Labels for M = 1..n in `runs` runs of random lengths; neighbouring runs differ.
std::vector<int> random_runs(int n, int runs, std::mt19937& rng) {
  std::vector<int> cuts(n - 1);
  for (int i = 0; i < n - 1; ++i) cuts[i] = i + 1;
  std::shuffle(cuts.begin(), cuts.end(), rng);
  cuts.resize(runs - 1);
  std::sort(cuts.begin(), cuts.end());
  cuts.push_back(n);
  std::vector<int> labels;
  int label = -1;
  for (int cut : cuts) {
    int next = std::uniform_int_distribution<int>(0, 5)(rng);
    while (next == label) next = std::uniform_int_distribution<int>(0, 5)(rng);
    label = next;
    labels.resize(cut, label);
  }
  return labels;
}

std::vector<std::vector<int64_t>> one_to(int n) {
  std::vector<std::vector<int64_t>> shapes;
  for (int64_t m = 1; m <= n; ++m) shapes.push_back({m});
  return shapes;
}

DecisionTree from_text(const std::string& text, int num_kernels) {
  return dispatch::decision_tree_from_json(json::parse(text), num_kernels);
}

}  // namespace

TEST(DecisionTree, FitIsExactOnRandomRunsOverM) {
  for (unsigned seed = 0; seed < 100; ++seed) {
    std::mt19937 rng(seed);
    int runs = std::uniform_int_distribution<int>(1, 16)(rng);
    std::vector<int> labels = random_runs(128, runs, rng);
    DecisionTree t = DecisionTree::fit(one_to(128), labels);
    for (int64_t m = 1; m <= 128; ++m)
      ASSERT_EQ(t.select({m}), labels[m - 1]) << "seed " << seed << ", M = " << m;
    // Every cut falls between two runs: one leaf per run.
    EXPECT_EQ(t.num_leaves(), runs) << "seed " << seed;
  }
}

TEST(DecisionTree, EightRunsMakeAShallowTreeNotAChain) {
  for (unsigned seed = 0; seed < 100; ++seed) {
    std::mt19937 rng(1000 + seed);
    DecisionTree t = DecisionTree::fit(one_to(128), random_runs(128, 8, rng));
    EXPECT_LE(t.depth(), 6) << "seed " << 1000 + seed << "\n" << t.describe({"M"});
  }
}

TEST(DecisionTree, AlternatingLabelsMakeABalancedTree) {
  // A noisy selection (every M its own run) must still be log-deep, not a chain.
  std::vector<int> labels;
  for (int m = 1; m <= 128; ++m) labels.push_back(m % 2);
  DecisionTree t = DecisionTree::fit(one_to(128), labels);
  EXPECT_EQ(t.num_leaves(), 128);
  EXPECT_LE(t.depth(), 8);
}

TEST(DecisionTree, ShapesOffTheSamplesGoToTheUpperOrExtremeSample) {
  std::vector<std::vector<int64_t>> shapes{{1}, {8}, {16}, {32}, {64}, {128}};
  std::vector<int> labels{0, 1, 2, 3, 4, 5};
  DecisionTree t = DecisionTree::fit(shapes, labels);
  EXPECT_EQ(t.select({2}), 1);
  EXPECT_EQ(t.select({9}), 2);
  EXPECT_EQ(t.select({33}), 4);
  EXPECT_EQ(t.select({100}), 5);
  for (int64_t m : {129, 1000, 1 << 30}) EXPECT_EQ(t.select({m}), 5) << "M = " << m;
  for (int64_t m : {int64_t{0}, int64_t{-1}, std::numeric_limits<int64_t>::min()})
    EXPECT_EQ(t.select({m}), 0) << "M = " << m;
  EXPECT_EQ(t.select({std::numeric_limits<int64_t>::max()}), 5);
}

TEST(DecisionTree, FitIsExactOnTwoDimensionalShapes) {
  for (unsigned seed = 0; seed < 20; ++seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int64_t> value(1, 64);
    std::set<std::vector<int64_t>> distinct;
    while (distinct.size() < 300) distinct.insert({value(rng), value(rng)});
    std::vector<std::vector<int64_t>> shapes(distinct.begin(), distinct.end());
    // Regions by M and N, with some noise.
    std::vector<int> labels;
    for (const auto& s : shapes)
      labels.push_back(rng() % 10 == 0 ? 7 : static_cast<int>((s[0] / 16 + 2 * (s[1] / 24)) % 5));
    DecisionTree t = DecisionTree::fit(shapes, labels);
    EXPECT_EQ(t.num_vars, 2);
    for (size_t i = 0; i < shapes.size(); ++i)
      ASSERT_EQ(t.select(shapes[i]), labels[i])
          << "seed " << seed << ", shape " << shapes[i][0] << "x" << shapes[i][1];
    EXPECT_LE(t.depth(), 20) << "seed " << seed;
  }
}

TEST(DecisionTree, TwoDimensionalGridSplitsOnTheVariableThatMatters) {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int> labels;
  for (int64_t m = 1; m <= 32; ++m)
    for (int64_t n = 1; n <= 32; ++n) {
      shapes.push_back({m, n});
      labels.push_back(n <= 12 ? 0 : 1);
    }
  DecisionTree t = DecisionTree::fit(shapes, labels);
  ASSERT_EQ(t.nodes.size(), 3u);
  EXPECT_EQ(t.nodes[0].var, 1);
  EXPECT_EQ(t.nodes[0].threshold, 12);
  EXPECT_EQ(t.describe({"M", "N"}), "if (N <= 12)\n  -> kernel 0\nelse\n  -> kernel 1\n");
}

TEST(DecisionTree, OneLabelIsOneLeaf) {
  DecisionTree t = DecisionTree::fit({{4}, {9}, {2}}, {3, 3, 3});
  EXPECT_EQ(t.depth(), 0);
  EXPECT_EQ(t.num_leaves(), 1);
  EXPECT_EQ(t.select({-7}), 3);
  EXPECT_EQ(t.describe({"M"}), "any M -> kernel 3\n");
}

TEST(DecisionTree, RepeatedSamplesWithTheSameLabelAreFine) {
  DecisionTree t = DecisionTree::fit({{1}, {2}, {1}, {2}}, {0, 1, 0, 1});
  EXPECT_EQ(t.num_leaves(), 2);
}

TEST(DecisionTree, DescribesOneVariableAsIntervals) {
  DecisionTree t = DecisionTree::fit(one_to(6), {0, 0, 1, 1, 1, 2});
  EXPECT_EQ(t.describe({"M"}), "M <= 2 -> kernel 0\n3 <= M <= 5 -> kernel 1\nM >= 6 -> kernel 2\n");
  EXPECT_EQ(DecisionTree::fit(one_to(3), {0, 1, 2}).describe({"M"}),
            "M <= 1 -> kernel 0\nM == 2 -> kernel 1\nM >= 3 -> kernel 2\n");
}

TEST(DecisionTree, DescribesUnreachableLeavesAndExtremeThresholds) {
  // Hand-written thresholds need not agree with each other; the text says so.
  DecisionTree t = from_text(R"({"num_vars": 1, "nodes": [
      {"var": 0, "threshold": 10, "left": 1, "right": 2},
      {"var": 0, "threshold": 20, "left": 3, "right": 4}, {"kernel": 2},
      {"kernel": 0}, {"kernel": 1}]})",
                             3);
  EXPECT_EQ(t.describe({"M"}),
            "M <= 10 -> kernel 0\nno M (unreachable) -> kernel 1\nM >= 11 -> kernel 2\n");
  DecisionTree top = from_text(R"({"num_vars": 1, "nodes": [
      {"var": 0, "threshold": 9223372036854775807, "left": 1, "right": 2},
      {"kernel": 0}, {"kernel": 1}]})",
                               2);
  EXPECT_EQ(top.describe({"M"}),
            "M <= 9223372036854775807 -> kernel 0\n"
            "no M (unreachable) -> kernel 1\n");
}

TEST(DecisionTree, FitRefusesBadSamples) {
  EXPECT_USER_ERROR(DecisionTree::fit({}, {}), "no sample shapes");
  EXPECT_USER_ERROR(DecisionTree::fit({{1}, {2}}, {0}), "2 sample shapes but 1 labels");
  EXPECT_USER_ERROR(DecisionTree::fit({{1}, {2, 3}}, {0, 1}),
                    "sample 1 has 2 shape values, expected 1");
  EXPECT_USER_ERROR(DecisionTree::fit({{1}, {2}}, {0, -1}), "sample 1 has label -1");
  EXPECT_USER_ERROR(DecisionTree::fit({{1, 5}, {2, 5}, {1, 5}}, {0, 1, 2}),
                    "shape [1, 5] has two labels, 0 and 2");
}

TEST(DecisionTree, SelectAndDescribeRefuseWrongArity) {
  DecisionTree t = DecisionTree::fit({{1, 1}, {2, 2}}, {0, 1});
  EXPECT_USER_ERROR(t.select(std::vector<int64_t>{1}), "2 shape variables: got a shape of 1");
  EXPECT_USER_ERROR(t.describe({"M"}), "got 1 names");
}

TEST(DecisionTree, JsonRoundTrip) {
  std::mt19937 rng(7);
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int> labels;
  for (int64_t m = 1; m <= 40; m += 3)
    for (int64_t n = 1; n <= 40; n += 5) {
      shapes.push_back({m, n});
      labels.push_back(static_cast<int>(rng() % 4));
    }
  DecisionTree t = DecisionTree::fit(shapes, labels);
  DecisionTree back = dispatch::decision_tree_from_json(json::parse(to_json(t).dump()), 4);
  EXPECT_EQ(back.num_vars, t.num_vars);
  ASSERT_EQ(back.nodes.size(), t.nodes.size());
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    EXPECT_EQ(back.nodes[i].var, t.nodes[i].var) << "node " << i;
    EXPECT_EQ(back.nodes[i].threshold, t.nodes[i].threshold) << "node " << i;
    if (t.nodes[i].var == -1) {
      EXPECT_EQ(back.nodes[i].kernel, t.nodes[i].kernel) << "node " << i;
    } else {
      EXPECT_EQ(back.nodes[i].left, t.nodes[i].left) << "node " << i;
      EXPECT_EQ(back.nodes[i].right, t.nodes[i].right) << "node " << i;
    }
  }
  EXPECT_EQ(to_json(back), to_json(t));
  // The documented form.
  EXPECT_EQ(to_json(DecisionTree::fit({{1}, {2}}, {0, 1})),
            json::parse(R"({"num_vars": 1, "nodes": [
                {"var": 0, "threshold": 1, "left": 1, "right": 2},
                {"kernel": 0}, {"kernel": 1}]})"));
}

TEST(DecisionTree, JsonRefusesEachKindOfMalformedTree) {
  // A valid tree is `{"num_vars": 1, "nodes": [N0, {"kernel": 0}, {"kernel": 1}]}`; each case
  // breaks one thing.
  const std::string leaves = R"({"kernel": 0}, {"kernel": 1})";
  auto tree = [&](const std::string& root, const std::string& more = "") {
    return R"({"num_vars": 1, "nodes": [)" + root + ", " + leaves + more + "]}";
  };
  const std::string root = R"({"var": 0, "threshold": 8, "left": 1, "right": 2})";
  EXPECT_NO_THROW(from_text(tree(root), 2));
  struct Case {
    std::string text, fragment;
  };
  const std::vector<Case> cases{
      {"[1, 2]", "expected an object with 'num_vars' and 'nodes', got [1,2]"},
      {R"({"num_vars": 1, "nodes": [{"kernel": 0}], "extra": 1})", "unknown field 'extra'"},
      {R"({"nodes": [{"kernel": 0}]})", "missing field 'num_vars'"},
      {R"({"num_vars": "one", "nodes": [{"kernel": 0}]})",
       "field 'num_vars' is \"one\", expected an integer"},
      {R"({"num_vars": -2, "nodes": [{"kernel": 0}]})", "field 'num_vars' is -2, expected >= 0"},
      {R"({"num_vars": 1})", "missing field 'nodes'"},
      {R"({"num_vars": 1, "nodes": {}})", "field 'nodes' is {}, expected a non-empty array"},
      {R"({"num_vars": 1, "nodes": []})", "field 'nodes' is [], expected a non-empty array"},
      {tree(root, ", 7"), "node 3 is 7, expected an object"},
      {tree(R"({"kernel": 0, "var": 0})"),
       "node 0: a leaf has only 'kernel', but it also has 'var'"},
      {tree(R"({"var": 0, "threshold": 8, "left": 1, "right": 2, "depth": 1})"),
       "node 0: unknown field 'depth'"},
      {tree(R"({"var": 0, "threshold": 8, "left": 1})"), "node 0: missing field 'right'"},
      {tree(R"({"var": 1, "threshold": 8, "left": 1, "right": 2})"),
       "node 0: field 'var' is 1, expected a shape variable index in [0, 1)"},
      {tree(R"({"var": -1, "threshold": 8, "left": 1, "right": 2})"),
       "node 0: field 'var' is -1, expected a shape variable index"},
      {tree(R"({"var": 0, "threshold": 8.5, "left": 1, "right": 2})"),
       "node 0: field 'threshold' is 8.5, expected an integer"},
      {tree(R"({"var": 0, "threshold": 18446744073709551615, "left": 1, "right": 2})"),
       "node 0: field 'threshold' is 18446744073709551615, expected an integer"},
      {tree(R"({"var": 0, "threshold": 8, "left": "1", "right": 2})"),
       "node 0: field 'left' is \"1\", expected an integer"},
      {tree(R"({"var": 0, "threshold": 8, "left": 1, "right": 3})"),
       "node 0: field 'right' is 3, expected a node index in [0, 3)"},
      {tree(R"({"var": 0, "threshold": 8, "left": 1, "right": 4294967296})"),
       "node 0: field 'right' is 4294967296, expected an integer in"},
      {tree(R"({"var": 0, "threshold": 8, "left": 2, "right": 2})"),
       "node 0: fields 'left' and 'right' both point to node 2"},
      {tree(R"({"var": 0, "threshold": 8, "left": 0, "right": 2})"),
       "node 0: field 'left' points to the root (node 0)"},
      {tree(R"({"var": 0, "threshold": 8, "left": 1, "right": 3})",
            R"(, {"var": 0, "threshold": 9, "left": 1, "right": 2})"),
       "node 3: field 'left' points to node 1, which is already a child of node 0"},
      // Nodes 3 and 4 point at each other, away from the root.
      {tree(root, R"(, {"var": 0, "threshold": 9, "left": 4, "right": 5},
                       {"var": 0, "threshold": 9, "left": 3, "right": 6},
                       {"kernel": 0}, {"kernel": 0})"),
       "node 3 is not reachable from the root (node 0)"},
      {tree(root, R"(, {"kernel": 1})"), "node 3 is not reachable from the root"},
      {tree(R"({"kernel": 2})"), "node 0: field 'kernel' is 2, expected a kernel index in [0, 2)"},
      {tree(R"({"kernel": -1})"), "node 0: field 'kernel' is -1, expected a kernel index"},
      {tree(R"({"kernel": null})"), "node 0: field 'kernel' is null, expected an integer"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_USER_ERROR(from_text(c.text, 2), "decision tree JSON: ");
    EXPECT_USER_ERROR(from_text(c.text, 2), c.fragment);
  }
}

TEST(DecisionTree, JsonMessagesStayShortForHugeValues) {
  json j = {{"num_vars", 1}, {"nodes", json::array()}};
  j["nodes"].push_back({{"kernel", std::string(100000, 'x')}});
  try {
    dispatch::decision_tree_from_json(j, 1);
    FAIL() << "expected a dietcode::Error";
  } catch (const Error& e) {
    EXPECT_LT(std::string(e.what()).size(), 300u) << e.what();
  }
}

TEST(DecisionTree, DeepTreesFromJsonNeedNoRecursion) {
  // A chain of 200000 compares: validation, depth, describe and select are iterative.
  constexpr int kInternal = 200000;
  // Internal node i sits at 2i; its left child, a leaf, at 2i+1; its right child at 2i+2.
  json nodes = json::array();
  for (int i = 0; i < kInternal; ++i) {
    nodes.push_back({{"var", i % 2}, {"threshold", i}, {"left", 2 * i + 1}, {"right", 2 * i + 2}});
    nodes.push_back({{"kernel", i % 3}});
  }
  nodes.push_back({{"kernel", 0}});
  DecisionTree t = dispatch::decision_tree_from_json({{"num_vars", 2}, {"nodes", nodes}}, 3);
  EXPECT_EQ(t.depth(), kInternal);
  EXPECT_EQ(t.num_leaves(), kInternal + 1);
  EXPECT_EQ(t.select({kInternal, kInternal}), 0);
  EXPECT_EQ(t.select({0, 0}), 0);
  EXPECT_EQ(t.select({1000, 1000}), 1000 % 3);
  EXPECT_LT(t.describe({"M", "N"}).size(), 500u * kInternal);  // indentation stops growing
}

TEST(DecisionTree, RandomlyMutatedJsonIsRefusedOrValid) {
  // A small fuzzer: every mutation must give a valid tree or a dietcode::Error, never a
  // crash, a hang or another exception.
  std::mt19937 rng(42);
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int> labels;
  for (int64_t m = 1; m <= 12; ++m)
    for (int64_t n = 1; n <= 3; ++n) {
      shapes.push_back({m, n});
      labels.push_back(static_cast<int>((m * 7 + n * 3) % 4));
    }
  const json base = to_json(DecisionTree::fit(shapes, labels));
  const std::vector<json> values{
      -1,  0, 1, 2, 5, 1000, int64_t{1} << 40, "x", 1.5, nullptr, json::array(), json::object(),
      true};
  const std::vector<std::string> fields{"var", "threshold", "left", "right", "kernel", "other"};
  int valid = 0, refused = 0;
  for (int round = 0; round < 3000; ++round) {
    json j = base;
    int mutations = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < mutations; ++k) {
      json& nodes = j["nodes"];
      json& node = nodes[rng() % nodes.size()];
      switch (rng() % 5) {
        case 0:
          if (node.is_object()) node[fields[rng() % fields.size()]] = values[rng() % values.size()];
          break;
        case 1:
          if (node.is_object()) node.erase(fields[rng() % fields.size()]);
          break;
        case 2:
          node = values[rng() % values.size()];
          break;
        case 3:
          nodes.push_back(json(nodes[rng() % nodes.size()]));  // a copy: push_back may reallocate
          break;
        case 4:
          j["num_vars"] = values[rng() % values.size()];
          break;
      }
    }
    try {
      DecisionTree t = dispatch::decision_tree_from_json(j, 4);
      ++valid;
      std::vector<int64_t> shape(t.num_vars, 5);
      int kernel = t.select(shape);
      EXPECT_TRUE(kernel >= 0 && kernel < 4) << j.dump();
      EXPECT_GE(t.depth(), 0);
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_GT(valid, 0);
  EXPECT_GT(refused, 0);
}
