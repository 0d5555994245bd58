// The dispatch decision tree as data:
//   DecisionTree::fit        greedy CART on distinct sample shapes, split until every leaf is pure
//   validate                 the structural checks shared by from-JSON and the code generator
//   select / depth / describe   interpreter and inspection (iterative: a fuzzed tree may be deep)
//   to_json / decision_tree_from_json
#include "dispatch/decision_tree.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "support/error.h"

namespace dietcode::dispatch {

using json = nlohmann::json;

namespace {

std::string format_shape(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// ---------------------------------------------------------------------------------------------
// Fitting

// A candidate split of one node's samples, ranked lexicographically by `key`:
//  1. misclassified: samples that differ from their side's majority label (the CART
//     criterion);
//  2. label_runs: runs of equal labels on the two sides, with the samples listed in order
//     of the split variable. It is the sides' leaf count for a tree that only cuts between
//     different labels, so it prefers cuts at label changes over cuts inside a run. (Counting
//     distinct labels instead would prefer peeling off one sample when the labels alternate,
//     which turns noisy selections into a chain as deep as the samples are many.)
//  3. imbalance: | left size - right size |, so equal-cost cuts halve the node and the tree
//     stays shallow;
//  then the lower variable and the lower threshold, so the result is deterministic.
struct Split {
  int var = -1;
  int64_t threshold = 0;
  int64_t misclassified = 0, label_runs = 0, imbalance = 0;
  auto key() const { return std::tie(misclassified, label_runs, imbalance, var, threshold); }
};

class Fitter {
 public:
  // `shapes` are distinct and all of length `num_vars`; `labels` are dense ids 0..num_labels-1.
  Fitter(const std::vector<std::vector<int64_t>>& shapes, const std::vector<int>& labels,
         int num_labels, int num_vars)
      : shapes_(shapes),
        labels_(labels),
        num_vars_(num_vars),
        left_count_(num_labels, 0),
        right_count_(num_labels, 0) {}

  // The best split of `samples` (two or more distinct shapes, not all of one label).
  Split best_split(std::vector<int>& samples) {
    std::optional<Split> best;
    const int64_t n = static_cast<int64_t>(samples.size());
    std::vector<int64_t> left_wrong(n + 1), right_wrong(n + 1);
    for (int v = 0; v < num_vars_; ++v) {
      std::sort(samples.begin(), samples.end(), [&](int a, int b) {
        return std::tie(shapes_[a][v], shapes_[a]) < std::tie(shapes_[b][v], shapes_[b]);
      });
      // left_wrong[k]: misclassified among the first k samples; right_wrong[k]: among the rest.
      int64_t majority = 0;
      for (int64_t k = 0; k < n; ++k) {
        majority = std::max(majority, ++left_count_[labels_[samples[k]]]);
        left_wrong[k + 1] = (k + 1) - majority;
      }
      majority = 0;
      for (int64_t k = n - 1; k >= 0; --k) {
        majority = std::max(majority, ++right_count_[labels_[samples[k]]]);
        right_wrong[k] = (n - k) - majority;
      }
      for (int s : samples) left_count_[labels_[s]] = right_count_[labels_[s]] = 0;

      int64_t runs = 1;
      for (int64_t k = 1; k < n; ++k) runs += labels_[samples[k - 1]] != labels_[samples[k]];
      for (int64_t k = 1; k < n; ++k) {
        int64_t below = shapes_[samples[k - 1]][v], above = shapes_[samples[k]][v];
        if (below == above) continue;  // not a cut: equal values go to the same side
        Split s;
        s.var = v;
        s.threshold = below;
        s.misclassified = left_wrong[k] + right_wrong[k];
        // Cutting inside a run of one label leaves a piece of it on each side.
        s.label_runs = runs + (labels_[samples[k - 1]] == labels_[samples[k]]);
        s.imbalance = std::abs(k - (n - k));
        if (!best || s.key() < best->key()) best = s;
      }
    }
    DC_INTERNAL_CHECK(best.has_value(), "{} distinct samples and no cut", n);
    return *best;
  }

  bool pure(const std::vector<int>& samples) const {
    return std::all_of(samples.begin(), samples.end(),
                       [&](int s) { return labels_[s] == labels_[samples.front()]; });
  }

  int64_t value(int sample, int var) const { return shapes_[sample][var]; }
  int label(int sample) const { return labels_[sample]; }

 private:
  const std::vector<std::vector<int64_t>>& shapes_;
  const std::vector<int>& labels_;
  int num_vars_;
  std::vector<int64_t> left_count_, right_count_;  // per label; all zero between calls
};

// ---------------------------------------------------------------------------------------------
// Validation

// The checks of validate(), with `what` naming the input in the messages.
void validate_tree(const DecisionTree& t, int num_kernels, const std::string& what) {
  if (t.num_vars < 0) user_error("{}: num_vars is {}, expected >= 0", what, t.num_vars);
  if (t.nodes.empty()) user_error("{}: the tree has no nodes, expected at least one", what);
  if (t.nodes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    user_error("{}: {} nodes are too many", what, t.nodes.size());
  const int n = static_cast<int>(t.nodes.size());
  std::vector<int> parent(n, -1);
  for (int i = 0; i < n; ++i) {
    const DecisionNode& node = t.nodes[i];
    if (node.var == -1) {
      if (node.kernel < 0 || node.kernel >= num_kernels)
        user_error("{}: node {}: field 'kernel' is {}, expected a kernel index in [0, {})", what, i,
                   node.kernel, num_kernels);
      continue;
    }
    if (node.var < 0 || node.var >= t.num_vars)
      user_error("{}: node {}: field 'var' is {}, expected a shape variable index in [0, {})", what,
                 i, node.var, t.num_vars);
    if (node.left == node.right)
      user_error("{}: node {}: fields 'left' and 'right' both point to node {}", what, i,
                 node.left);
    for (auto [field, child] : {std::pair{"left", node.left}, std::pair{"right", node.right}}) {
      if (child < 0 || child >= n)
        user_error("{}: node {}: field '{}' is {}, expected a node index in [0, {})", what, i,
                   field, child, n);
      if (child == 0)
        user_error("{}: node {}: field '{}' points to the root (node 0), which makes a cycle", what,
                   i, field);
      if (parent[child] != -1)
        user_error("{}: node {}: field '{}' points to node {}, which is already a child of node {}",
                   what, i, field, child, parent[child]);
      parent[child] = i;
    }
  }
  // Every node but the root now has exactly one parent, so what the root does not reach
  // hangs off a cycle.
  std::vector<bool> reached(n, false);
  std::vector<int> stack{0};
  while (!stack.empty()) {
    int i = stack.back();
    stack.pop_back();
    reached[i] = true;
    if (t.nodes[i].var != -1) {
      stack.push_back(t.nodes[i].left);
      stack.push_back(t.nodes[i].right);
    }
  }
  for (int i = 0; i < n; ++i)
    if (!reached[i])
      user_error("{}: node {} is not reachable from the root (node 0); its parents form a cycle",
                 what, i);
}

// Checks a tree built in this process (no kernel count is known here).
void check_tree(const DecisionTree& t) {
  validate_tree(t, std::numeric_limits<int>::max(), "decision tree");
}

// ---------------------------------------------------------------------------------------------
// describe()

// Lines of `if (M <= 16)` / `else` / `-> kernel 2`, indented by depth.
std::string describe_branches(const DecisionTree& t, const std::vector<std::string>& names) {
  // Indentation stops growing at this depth, so a deep (e.g. fuzzed) tree's text stays
  // linear in its size.
  constexpr int kMaxIndent = 64;
  enum class Step { Visit, Else };
  std::vector<std::tuple<Step, int, int>> stack{{Step::Visit, 0, 0}};  // step, node, depth
  std::string text;
  while (!stack.empty()) {
    auto [step, i, depth] = stack.back();
    stack.pop_back();
    text += std::string(2 * std::min(depth, kMaxIndent), ' ');
    const DecisionNode& node = t.nodes[i];
    if (step == Step::Else) {
      text += "else\n";
    } else if (node.var == -1) {
      text += fmt::format("-> kernel {}\n", node.kernel);
    } else {
      text += fmt::format("if ({} <= {})\n", names[node.var], node.threshold);
      stack.emplace_back(Step::Visit, node.right, depth + 1);
      stack.emplace_back(Step::Else, i, depth);
      stack.emplace_back(Step::Visit, node.left, depth + 1);
    }
  }
  return text;
}

// One line per leaf of a one-variable tree: the interval of values it receives.
std::string describe_intervals(const DecisionTree& t, const std::string& name) {
  struct Interval {
    std::optional<int64_t> lo, hi;  // none: unbounded
    bool empty = false;
  };
  std::vector<std::pair<int, Interval>> stack{{0, Interval{}}};
  std::string text;
  while (!stack.empty()) {
    auto [i, range] = stack.back();
    stack.pop_back();
    const DecisionNode& node = t.nodes[i];
    if (node.var == -1) {
      std::string where;
      if (range.empty)
        where = fmt::format("no {} (unreachable)", name);
      else if (range.lo && range.hi && *range.lo == *range.hi)
        where = fmt::format("{} == {}", name, *range.lo);
      else if (range.lo && range.hi)
        where = fmt::format("{} <= {} <= {}", *range.lo, name, *range.hi);
      else if (range.lo)
        where = fmt::format("{} >= {}", name, *range.lo);
      else if (range.hi)
        where = fmt::format("{} <= {}", name, *range.hi);
      else
        where = fmt::format("any {}", name);
      text += fmt::format("{} -> kernel {}\n", where, node.kernel);
      continue;
    }
    Interval left = range, right = range;
    left.hi = std::min(range.hi.value_or(node.threshold), node.threshold);
    if (node.threshold == std::numeric_limits<int64_t>::max())
      right.empty = true;
    else
      right.lo = std::max(range.lo.value_or(node.threshold + 1), node.threshold + 1);
    for (Interval* r : {&left, &right})
      if (r->lo && r->hi && *r->lo > *r->hi) r->empty = true;
    stack.emplace_back(node.right, right);
    stack.emplace_back(node.left, left);
  }
  return text;
}

// ---------------------------------------------------------------------------------------------
// JSON

// A JSON value in a message, cut short: a fuzzed field may hold megabytes.
std::string excerpt(const json& j) {
  constexpr size_t kMaxChars = 60;
  std::string text = j.dump();
  return text.size() <= kMaxChars ? text : text.substr(0, kMaxChars) + "...";
}

std::optional<int64_t> as_int64(const json& j) {
  if (j.is_number_unsigned()) {
    uint64_t v = j.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(v);
  }
  if (j.is_number_integer()) return j.get<int64_t>();
  return std::nullopt;
}

// Field `name` of `object`, an integer in [lo, hi]; `where` names the object in messages.
int64_t integer_field(const json& object, const std::string& where, const char* name, int64_t lo,
                      int64_t hi) {
  auto it = object.find(name);
  if (it == object.end()) user_error("{}: missing field '{}'", where, name);
  std::optional<int64_t> v = as_int64(*it);
  if (!v) user_error("{}: field '{}' is {}, expected an integer", where, name, excerpt(*it));
  if (*v < lo || *v > hi)
    user_error("{}: field '{}' is {}, expected an integer in [{}, {}]", where, name, *v, lo, hi);
  return *v;
}

// An int-sized field; validate_tree() checks its range against the tree.
int int_field(const json& object, const std::string& where, const char* name) {
  return static_cast<int>(integer_field(object, where, name, std::numeric_limits<int>::min(),
                                        std::numeric_limits<int>::max()));
}

DecisionNode node_from_json(const json& j, int index, int num_vars) {
  const std::string where = fmt::format("decision tree JSON: node {}", index);
  if (!j.is_object())
    user_error(
        "{} is {}, expected an object with 'kernel' (a leaf) or with 'var', 'threshold', "
        "'left' and 'right'",
        where, excerpt(j));
  DecisionNode node;
  if (j.contains("kernel")) {
    for (auto it = j.begin(); it != j.end(); ++it)
      if (it.key() != "kernel")
        user_error("{}: a leaf has only 'kernel', but it also has '{}'", where, it.key());
    node.kernel = int_field(j, where, "kernel");
    return node;
  }
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "var" && it.key() != "threshold" && it.key() != "left" && it.key() != "right")
      user_error(
          "{}: unknown field '{}'; expected 'kernel' (a leaf) or 'var', 'threshold', 'left' "
          "and 'right'",
          where, it.key());
  node.var = int_field(j, where, "var");
  // -1 marks a leaf in DecisionNode, so it is refused here rather than read as one.
  if (node.var < 0 || node.var >= num_vars)
    user_error("{}: field 'var' is {}, expected a shape variable index in [0, {})", where, node.var,
               num_vars);
  node.threshold = integer_field(j, where, "threshold", std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<int64_t>::max());
  node.left = int_field(j, where, "left");
  node.right = int_field(j, where, "right");
  return node;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

DecisionTree DecisionTree::fit(const std::vector<std::vector<int64_t>>& shapes,
                               const std::vector<int>& labels) {
  if (shapes.empty()) user_error("decision tree: no sample shapes to fit");
  if (shapes.size() != labels.size())
    user_error("decision tree: {} sample shapes but {} labels; expected one label per shape",
               shapes.size(), labels.size());
  if (shapes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    user_error("decision tree: {} samples are too many", shapes.size());
  const size_t num_vars = shapes[0].size();
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (shapes[i].size() != num_vars)
      user_error("decision tree: sample {} has {} shape values, expected {} (as sample 0)", i,
                 shapes[i].size(), num_vars);
    if (labels[i] < 0)
      user_error("decision tree: sample {} has label {}, expected >= 0", i, labels[i]);
  }

  // Distinct shapes, each with its one label, and the labels as dense ids.
  std::map<std::vector<int64_t>, int> label_of;
  for (size_t i = 0; i < shapes.size(); ++i) {
    auto [it, inserted] = label_of.emplace(shapes[i], labels[i]);
    if (!inserted && it->second != labels[i])
      user_error("decision tree: shape {} has two labels, {} and {}", format_shape(shapes[i]),
                 it->second, labels[i]);
  }
  std::vector<std::vector<int64_t>> distinct;
  std::vector<int> dense;
  std::map<int, int> dense_of;
  std::vector<int> label_of_dense;
  for (const auto& [shape, label] : label_of) {
    auto [it, inserted] = dense_of.emplace(label, static_cast<int>(label_of_dense.size()));
    if (inserted) label_of_dense.push_back(label);
    distinct.push_back(shape);
    dense.push_back(it->second);
  }

  DecisionTree tree;
  tree.num_vars = static_cast<int>(num_vars);
  Fitter fitter(distinct, dense, static_cast<int>(label_of_dense.size()), tree.num_vars);
  // A node's two children are numbered when it splits. A work list instead of recursion,
  // since a chain of splits can be as long as there are samples.
  std::vector<int> all(distinct.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  std::vector<std::pair<int, std::vector<int>>> work;
  tree.nodes.emplace_back();
  work.emplace_back(0, std::move(all));
  while (!work.empty()) {
    auto [index, samples] = std::move(work.back());
    work.pop_back();
    if (fitter.pure(samples)) {
      tree.nodes[index].kernel = label_of_dense[fitter.label(samples.front())];
      continue;
    }
    Split split = fitter.best_split(samples);
    std::vector<int> left, right;
    for (int s : samples)
      (fitter.value(s, split.var) <= split.threshold ? left : right).push_back(s);
    DecisionNode& node = tree.nodes[index];
    node.var = split.var;
    node.threshold = split.threshold;
    node.left = static_cast<int>(tree.nodes.size());
    node.right = node.left + 1;
    work.emplace_back(node.left, std::move(left));
    work.emplace_back(node.right, std::move(right));
    tree.nodes.emplace_back();
    tree.nodes.emplace_back();
  }

  for (size_t i = 0; i < distinct.size(); ++i)
    DC_INTERNAL_CHECK(tree.select(distinct[i].data()) == label_of_dense[dense[i]],
                      "the fitted tree misclassifies {}", format_shape(distinct[i]));
  return tree;
}

int DecisionTree::select(const std::vector<int64_t>& shape) const {
  if (shape.size() != static_cast<size_t>(num_vars))
    user_error("decision tree over {} shape variables: got a shape of {} values ({})", num_vars,
               shape.size(), format_shape(shape));
  return select(shape.data());
}

int DecisionTree::select(const int64_t* shape) const {
  // The bounds make a malformed hand-built tree fail loudly instead of looping or reading
  // out of bounds; fit() and decision_tree_from_json() only return well-formed ones.
  DC_INTERNAL_CHECK(!nodes.empty(), "select on a decision tree without nodes");
  size_t i = 0;
  for (size_t steps = 0; steps < nodes.size(); ++steps) {
    const DecisionNode& node = nodes[i];
    if (node.var == -1) return node.kernel;
    DC_INTERNAL_CHECK(node.var >= 0 && node.var < num_vars, "node {}: var {}", i, node.var);
    i = static_cast<size_t>(shape[node.var] <= node.threshold ? node.left : node.right);
    DC_INTERNAL_CHECK(i < nodes.size(), "a child index is out of range");
  }
  internal_error(__FILE__, __LINE__, "decision tree: no leaf reached; the tree has a cycle");
}

std::string DecisionTree::describe(const std::vector<std::string>& var_names) const {
  check_tree(*this);
  if (var_names.size() != static_cast<size_t>(num_vars))
    user_error("decision tree over {} shape variables: got {} names to describe it", num_vars,
               var_names.size());
  return num_vars == 1 ? describe_intervals(*this, var_names[0])
                       : describe_branches(*this, var_names);
}

int DecisionTree::depth() const {
  check_tree(*this);
  int deepest = 0;
  std::vector<std::pair<int, int>> stack{{0, 0}};  // node, compares above it
  while (!stack.empty()) {
    auto [i, d] = stack.back();
    stack.pop_back();
    deepest = std::max(deepest, d);
    if (nodes[i].var != -1) {
      stack.emplace_back(nodes[i].left, d + 1);
      stack.emplace_back(nodes[i].right, d + 1);
    }
  }
  return deepest;
}

int DecisionTree::num_leaves() const {
  check_tree(*this);
  return static_cast<int>(
      std::count_if(nodes.begin(), nodes.end(), [](const DecisionNode& n) { return n.var == -1; }));
}

void validate(const DecisionTree& t, int num_kernels) {
  validate_tree(t, num_kernels, "decision tree");
}

json to_json(const DecisionTree& t) {
  json nodes = json::array();
  for (const DecisionNode& n : t.nodes) {
    if (n.var == -1)
      nodes.push_back({{"kernel", n.kernel}});
    else
      nodes.push_back(
          {{"var", n.var}, {"threshold", n.threshold}, {"left", n.left}, {"right", n.right}});
  }
  return {{"num_vars", t.num_vars}, {"nodes", std::move(nodes)}};
}

DecisionTree decision_tree_from_json(const json& j, int num_kernels) {
  if (!j.is_object())
    user_error("decision tree JSON: expected an object with 'num_vars' and 'nodes', got {}",
               excerpt(j));
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "num_vars" && it.key() != "nodes")
      user_error("decision tree JSON: unknown field '{}'; expected 'num_vars' and 'nodes'",
                 it.key());
  DecisionTree t;
  t.num_vars = int_field(j, "decision tree JSON", "num_vars");
  if (t.num_vars < 0)
    user_error("decision tree JSON: field 'num_vars' is {}, expected >= 0", t.num_vars);
  auto nodes = j.find("nodes");
  if (nodes == j.end()) user_error("decision tree JSON: missing field 'nodes'");
  if (!nodes->is_array() || nodes->empty())
    user_error("decision tree JSON: field 'nodes' is {}, expected a non-empty array of nodes",
               excerpt(*nodes));
  if (nodes->size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    user_error("decision tree JSON: {} nodes are too many", nodes->size());
  t.nodes.reserve(nodes->size());
  for (size_t i = 0; i < nodes->size(); ++i)
    t.nodes.push_back(node_from_json((*nodes)[i], static_cast<int>(i), t.num_vars));
  validate_tree(t, num_kernels, "decision tree JSON");
  return t;
}

}  // namespace dietcode::dispatch
