// A model as a graph of operators that share one symbolic dimension, the sequence
// length T, and the plan that places its intermediate tensors in one reused workspace.
//
//   Graph g;
//   int x = g.input("input", {kT, 768});
//   int w = g.weight("qkv.weight", {2304, 768});
//   int b = g.weight("qkv.bias", {2304});
//   int qkv = g.add("qkv", dense_spec, {x, w, b}, {kT, 2304});
//   ...
//   g.set_output(y);
//   MemoryPlan plan = plan_memory(g, 128);  // every activation at its offset for T <= 128
//
// Nodes run in the order they were added (each reads tensors defined before it). A
// node's operator is an ops::OperatorSpec whose shape variable M is T; `add` checks that
// the tensors it is given have exactly the element counts the operator takes, for
// several T, so a wrong wiring is refused when the graph is built, not when it runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/spec.h"

namespace dietcode::model {

// The symbolic sequence length in a shape.
constexpr int64_t kT = -1;

enum class TensorKind { Input, Weight, Activation };

struct GraphTensor {
  std::string name;
  std::vector<int64_t> shape;  // constants and kT
  TensorKind kind = TensorKind::Activation;
  int64_t elements(int64_t t) const;
};

struct GraphNode {
  std::string name;
  ops::OperatorSpec op;
  std::vector<int> inputs;  // tensor ids, in the operator's input order
  int output = -1;
};

class Graph {
 public:
  // Each returns the new tensor's id. Names are unique; shapes hold positive constants or kT.
  int input(const std::string& name, const std::vector<int64_t>& shape);
  int weight(const std::string& name, const std::vector<int64_t>& shape);
  // A node computing `op` from `inputs` into a new activation of `output_shape`. Throws
  // dietcode::Error naming the node and the input when an element count differs from the
  // operator's, or a weight is fed where the operator reads a per-call input.
  int add(const std::string& name, const ops::OperatorSpec& op, const std::vector<int>& inputs,
          const std::vector<int64_t>& output_shape);
  void set_output(int tensor);

  const std::vector<GraphTensor>& tensors() const { return tensors_; }
  const std::vector<GraphNode>& nodes() const { return nodes_; }
  const GraphTensor& tensor(int id) const { return tensors_.at(id); }
  int output() const { return output_; }
  int input_id() const;  // the one input (throws if the graph has none or several)
  // FLOPs of one forward pass at T (2 per multiply-add of the products, the attention's
  // two products included; row operators not counted).
  double flops(int64_t t) const;

 private:
  int new_tensor(const std::string& name, const std::vector<int64_t>& shape, TensorKind kind);
  std::vector<GraphTensor> tensors_;
  std::vector<GraphNode> nodes_;
  int output_ = -1;
};

// Where each activation lives in one workspace of `elements` floats, valid for every
// T <= t_capacity (an activation's size grows with T, so a slot sized at the capacity
// holds it at any smaller T). Two activations share memory only if their lifetimes
// (from the node that writes one to the last node that reads it) do not overlap; the
// graph's output is written to the caller's buffer and takes no slot.
struct MemoryPlan {
  int64_t t_capacity = 0;
  int64_t elements = 0;
  std::vector<int64_t> offset;  // per tensor; -1 for inputs, weights and the output
};
MemoryPlan plan_memory(const Graph& g, int64_t t_capacity);

// The key under which a module computes a node's operator: the spec without its declared
// range of M and its instances (a module tuned for T in 1..128 runs any T).
std::string operator_key(const ops::OperatorSpec& op);

}  // namespace dietcode::model
