#include "model/graph.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "ops/work.h"
#include "support/error.h"

namespace dietcode::model {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::vector<std::string> parts;
  for (int64_t d : shape) parts.push_back(d == kT ? "T" : std::to_string(d));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

// T values at which a node's wiring is checked: element counts are polynomials of low
// degree in T, so agreeing at these means agreeing everywhere that matters.
constexpr int64_t kCheckLengths[] = {1, 2, 7};

}  // namespace

int64_t GraphTensor::elements(int64_t t) const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d == kT ? t : d;
  return n;
}

int Graph::new_tensor(const std::string& name, const std::vector<int64_t>& shape, TensorKind kind) {
  for (const GraphTensor& t : tensors_)
    if (t.name == name) user_error("graph: tensor '{}' is declared twice", name);
  for (int64_t d : shape)
    if (d != kT && d < 1)
      user_error("graph: tensor '{}' has shape {}; expected positive extents or T", name,
                 shape_text(shape));
  if (kind == TensorKind::Weight && std::count(shape.begin(), shape.end(), kT) > 0)
    user_error("graph: weight '{}' has shape {}; weights cannot depend on T", name,
               shape_text(shape));
  tensors_.push_back({name, shape, kind});
  return int(tensors_.size()) - 1;
}

int Graph::input(const std::string& name, const std::vector<int64_t>& shape) {
  return new_tensor(name, shape, TensorKind::Input);
}

int Graph::weight(const std::string& name, const std::vector<int64_t>& shape) {
  return new_tensor(name, shape, TensorKind::Weight);
}

int Graph::add(const std::string& name, const ops::OperatorSpec& op, const std::vector<int>& inputs,
               const std::vector<int64_t>& output_shape) {
  for (const GraphNode& n : nodes_)
    if (n.name == name) user_error("graph: node '{}' is declared twice", name);
  for (int id : inputs)
    if (id < 0 || id >= int(tensors_.size()))
      user_error("graph: node '{}' reads tensor {}, which does not exist", name, id);
  te::Operator built = op.build();
  if (built.inputs.size() != inputs.size())
    user_error("graph: node '{}' ({}) takes {} inputs; {} given", name, op.describe(),
               built.inputs.size(), inputs.size());
  const GraphTensor out{name + ".out", output_shape, TensorKind::Activation};
  for (int64_t t : kCheckLengths) {
    std::vector<int64_t> sizes = built.buffer_sizes(built.bind({t}));
    for (size_t i = 0; i <= inputs.size(); ++i) {
      const GraphTensor& g = i < inputs.size() ? tensors_[inputs[i]] : out;
      const std::string what =
          i < inputs.size() ? "input " + built.inputs[i].tensor.name() : std::string("output");
      if (g.elements(t) != sizes[i])
        user_error(
            "graph: node '{}' ({}): {} is tensor '{}' {} of {} elements at T = {}; the "
            "operator expects {}",
            name, op.describe(), what, g.name, shape_text(g.shape), g.elements(t), t, sizes[i]);
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (tensors_[inputs[i]].kind == TensorKind::Weight && !built.inputs[i].constant)
      user_error("graph: node '{}' reads weight '{}' as its input {}, which changes every call",
                 name, tensors_[inputs[i]].name, built.inputs[i].tensor.name());
  const int output = new_tensor(out.name, out.shape, out.kind);
  nodes_.push_back({name, op, inputs, output});
  return output;
}

void Graph::set_output(int tensor) {
  if (tensor < 0 || tensor >= int(tensors_.size()) ||
      tensors_[tensor].kind != TensorKind::Activation)
    user_error("graph: the output must be a node's result");
  output_ = tensor;
}

int Graph::input_id() const {
  int found = -1;
  for (int i = 0; i < int(tensors_.size()); ++i)
    if (tensors_[i].kind == TensorKind::Input) {
      if (found >= 0) user_error("graph: more than one input");
      found = i;
    }
  if (found < 0) user_error("graph: no input");
  return found;
}

double Graph::flops(int64_t t) const {
  double total = 0;
  for (const GraphNode& n : nodes_) {
    if (ops::is_row_operator(n.op.op)) continue;
    total += ops::work_of(n.op.build(), {t}).amount;
  }
  return total;
}

MemoryPlan plan_memory(const Graph& g, int64_t t_capacity) {
  if (t_capacity < 1) user_error("memory plan: capacity T = {}; expected >= 1", t_capacity);
  const auto& tensors = g.tensors();
  const auto& nodes = g.nodes();
  MemoryPlan plan;
  plan.t_capacity = t_capacity;
  plan.offset.assign(tensors.size(), -1);
  // Lifetimes in node steps: [the node that writes it, the last node that reads it].
  std::vector<int> first(tensors.size(), -1), last(tensors.size(), -1);
  for (int s = 0; s < int(nodes.size()); ++s) {
    first[nodes[s].output] = s;
    last[nodes[s].output] = std::max(last[nodes[s].output], s);
    for (int id : nodes[s].inputs) last[id] = s;
  }
  // Slots: [offset, offset + size) busy until `until`. Each activation, in the order it is
  // written, takes the lowest offset where it overlaps no slot still live at its write
  // (a node's output never shares memory with its own inputs: they are live at that step).
  struct Slot {
    int64_t begin, end;
    int until;
  };
  std::vector<Slot> slots;
  // Sizes rounded up to 16 floats: every tensor starts 64-byte aligned.
  auto rounded = [](int64_t n) { return (n + 15) / 16 * 16; };
  for (int s = 0; s < int(nodes.size()); ++s) {
    const int id = nodes[s].output;
    if (id == g.output()) continue;
    const int64_t size = rounded(tensors[id].elements(t_capacity));
    std::vector<Slot> live;
    for (const Slot& slot : slots)
      if (slot.until >= s) live.push_back(slot);
    std::sort(live.begin(), live.end(),
              [](const Slot& a, const Slot& b) { return a.begin < b.begin; });
    int64_t at = 0;
    for (const Slot& slot : live) {
      if (at + size <= slot.begin) break;
      at = std::max(at, slot.end);
    }
    plan.offset[id] = at;
    plan.elements = std::max(plan.elements, at + size);
    slots.push_back({at, at + size, std::max(last[id], s)});
  }
  return plan;
}

std::string operator_key(const ops::OperatorSpec& op) {
  nlohmann::json j = ops::to_json(op);
  j.erase("M");
  j.erase("instances");
  return j.dump();
}

}  // namespace dietcode::model
