// What `dietcode tune` tunes: a workload is a named list of operators, each tuned into
// its own module. Workloads come from presets (`bert-base-dense`, ...) or from a spec
// file (JSON):
//
//   {
//     "name": "my-encoder",
//     "operators": [
//       {"name": "qkv", "op": "dense", "N": 2304, "K": 768, "M": [1, 128],
//        "epilogue": "none", "instances": [[1, 4.0], [128, 1.0]]},
//       {"name": "scores", "op": "batch_matmul", "batch": 12, "N": "M", "K": 64,
//        "M": [1, 128], "layout": "NT"},
//       {"name": "attention", "op": "attention", "N": 12, "K": 64, "M": [1, 128]},
//       {"name": "ln", "op": "add_layer_norm", "N": 768, "M": [1, 128]}
//     ]
//   }
//
// "op": dense, batch_matmul, attention (N heads of size K, optional "batch" sequences,
// "mask" and "packed_qkv": Q, K, V from one [batch, T, 3 N K] input) or a row operator (add, gelu,
// gelu_tanh, softmax, layer_norm, add_layer_norm: rows of N; layer_norm and add_layer_norm take
// "eps"). "N": "M" (or "K": "M") puts the shape variable on that side of a batch_matmul too
// (attention's Q K^T and S V).
//
// "instances" (optional) are [M, weight] pairs: the shapes the workload sees and how
// often; without them every M in range counts once. Errors name the file, the line and
// the field ("spec.json:7: operators[0].N: expected a positive integer").
#pragma once

#include <string>
#include <vector>

#include "ops/spec.h"

namespace dietcode::tune {

struct WorkloadOperator {
  std::string name;  // file-name safe: letters, digits, '-', '_'
  ops::OperatorSpec op;
};

struct WorkloadSpec {
  std::string name;
  std::vector<WorkloadOperator> operators;
  // The operators are a model's layers, whose weights together exceed the caches: kernels
  // are measured with their weights cold, from a ring of copies (MeasureOptions).
  bool cold_weights = false;
};

// Names of the presets, and one by name (throws dietcode::Error listing the known ones).
std::vector<std::string> workload_presets();
WorkloadSpec preset_workload(const std::string& name);

// Parses a spec file's text; `path` names it in messages. Throws dietcode::Error.
WorkloadSpec parse_workload_spec(const std::string& text, const std::string& path);
WorkloadSpec load_workload_spec(const std::string& path);

}  // namespace dietcode::tune
