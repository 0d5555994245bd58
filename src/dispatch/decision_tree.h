// The dispatcher of a tuned module: a decision tree over the shape variables that
// maps any shape (declared or not) to the index of one selected micro-kernel.
// Internal nodes test `shape[var] <= threshold` (true: left child); leaves name a
// kernel. The tree is data here (fit, JSON, text, an interpreter for tests) and is
// compiled to native code by dispatch/dispatch_codegen.h, so a call pays a few
// compare-and-branch instructions, not a lookup.
//
//   DecisionTree t = DecisionTree::fit(sample_shapes, kernel_of_each_sample);
//   int kernel = t.select({m});                       // interpreter
//   auto fn = jit_compile_dispatcher(t);  fn->select(shape_ptr); // native code
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace dietcode::dispatch {

struct DecisionNode {
  int var = -1;           // shape variable tested; -1 for a leaf
  int64_t threshold = 0;  // internal node: shape[var] <= threshold goes to `left`
  int left = -1, right = -1;
  int kernel = -1;  // leaf: the selected micro-kernel's index
};

struct DecisionTree {
  int num_vars = 0;                 // length of the shape vectors it takes
  std::vector<DecisionNode> nodes;  // nodes[0] is the root

  // Builds the tree a greedy CART split finds that maps every sample to its label
  // exactly (samples are shapes; labels >= 0; a repeated shape must repeat its label).
  // Each split minimizes the samples misclassified by the two sides' majority labels,
  // then prefers cuts between different labels and balanced sides (decision_tree.cpp).
  // A threshold is the lower of two adjacent sample values, so a shape between two
  // samples goes with the upper one, and shapes beyond the largest (below the
  // smallest) sample go with it.
  // Throws dietcode::Error on empty input, mismatched lengths or conflicting labels.
  static DecisionTree fit(const std::vector<std::vector<int64_t>>& shapes,
                          const std::vector<int>& labels);

  // The kernel for a shape (interpreted; the compiled dispatcher must agree).
  int select(const std::vector<int64_t>& shape) const;
  int select(const int64_t* shape) const;

  // Text for `dietcode show`: indented `if (M <= 16)` / `else` / `-> kernel 2` lines,
  // or for a one-variable tree one line per leaf: `17 <= M <= 32 -> kernel 1`.
  std::string describe(const std::vector<std::string>& var_names) const;
  int depth() const;  // compares on the longest path from the root; 0 for a single leaf
  int num_leaves() const;
};

// Throws dietcode::Error naming the node and field unless `t` is a tree: nodes[0] the
// root, every node reached from it exactly once (no cycles), each internal node's var in
// [0, num_vars), and each leaf's kernel in [0, num_kernels).
void validate(const DecisionTree& t, int num_kernels);

nlohmann::json to_json(const DecisionTree& t);
// The form is {"num_vars": 1, "nodes": [{"var": 0, "threshold": 16, "left": 1,
// "right": 2}, {"kernel": 0}, {"kernel": 1}]}. Checks the types and validate(); throws
// dietcode::Error naming the node and field that is wrong. Safe on any JSON value.
DecisionTree decision_tree_from_json(const nlohmann::json& j, int num_kernels);

}  // namespace dietcode::dispatch
