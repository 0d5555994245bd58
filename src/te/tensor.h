// Tensor expressions: the front end in which operators are declared.
//
//   ShapeVar   a symbolic dimension with a declared range ([1, 128]) and optional
//              weighted instances (the shapes a workload actually sees, and how often).
//   input()    a placeholder tensor whose shape uses shape variables; `constant`
//              marks weights that may be packed once, ahead of the calls.
//   compute()  an output tensor defined per element by an expression of its axes,
//              possibly containing reduce_sum and an elementwise epilogue.
//   row_stage()  an intermediate value per row of the output (a mean, a maximum, a
//              reciprocal standard deviation): a compute over the output's leading
//              dimensions whose body holds one reduction along the row (sum or max),
//              possibly wrapped in elementwise work. Later stages and the output read
//              it like a tensor (`mean[i]`). Row operators (LayerNorm, softmax) are
//              declared this way; see ops/row_op.h for the form they take.
//   Operator   shape variables + inputs + row stages + one compute: what gets scheduled.
//
// Runtime calling convention of every operator: the values of its shape variables
// in declaration order, then one buffer per input (declaration order), then the output.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/evaluate.h"
#include "ir/expr.h"

namespace dietcode::te {

struct WeightedInstance {
  int64_t value;
  double weight;
};

struct ShapeVar {
  ir::Var var;
  int64_t min = 1, max = 1;
  std::vector<WeightedInstance> instances;  // empty: every value in [min, max], weight 1
};

// A shape variable with values in [min, max]; throws dietcode::Error if the range is empty
// or not positive.
ShapeVar shape_var(const std::string& name, int64_t min, int64_t max,
                   std::vector<WeightedInstance> instances = {});

struct Input {
  ir::Buffer tensor;
  bool constant = false;
};

Input input(const std::string& name, std::vector<ir::Expr> shape, bool constant = false);

struct ComputeOp {
  ir::Buffer output;
  std::vector<ir::Var> axes;  // one per output dimension
  ir::Expr body;              // in terms of axes (and reduction axes inside Reduce nodes)
};

ComputeOp compute(const std::string& name, std::vector<ir::Expr> shape,
                  const std::vector<std::string>& axis_names,
                  const std::function<ir::Expr(const std::vector<ir::Var>&)>& body);

// A per-row stage: compute() under another name, kept apart so that a reader sees that
// its result is internal (never a buffer the caller passes).
inline ComputeOp row_stage(const std::string& name, std::vector<ir::Expr> row_shape,
                           const std::vector<std::string>& axis_names,
                           const std::function<ir::Expr(const std::vector<ir::Var>&)>& body) {
  return compute(name, std::move(row_shape), axis_names, body);
}

struct Operator {
  std::string name;
  std::vector<ShapeVar> shape_vars;
  std::vector<Input> inputs;
  ComputeOp compute;
  // Intermediate per-row values, in evaluation order (each may read the earlier ones);
  // empty for contractions and plain elementwise operators.
  std::vector<ComputeOp> stages;

  // Values for the shape variables, in order. Throws dietcode::Error when the count
  // is wrong, a value is < 1, or (with strict) a value is outside its declared range.
  ir::Bindings bind(const std::vector<int64_t>& shape, bool strict = false) const;
  // The same checks without building the bindings (a kernel's per-call path).
  void check_shape(const std::vector<int64_t>& shape, bool strict = false) const;
  // Element counts of every input and of the output, for the given shape.
  std::vector<int64_t> buffer_sizes(const ir::Bindings& bindings) const;
  // One line per tensor and the compute definition.
  std::string describe() const;
};

}  // namespace dietcode::te
