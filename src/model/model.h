// A BERT encoder ready to run: the graph (model/bert.h), the tuned module of each of its
// distinct operators, the weights, and a workspace placed by the memory plan.
//
//   Model m = Model::load("dietcode-out/bert-base", "bert.safetensors");
//   m.forward(x, seq_len, y);  // x, y: [seq_len, hidden]; any seq_len >= 1, any thread
//
// A model directory holds <operator>.module.json for the operators bert_operators lists
// (`dietcode tune bert-base --out DIR` writes them). The architecture comes from the
// weights file (layers, hidden, FFN width) and the modules (heads, LayerNorm eps); a
// module that computes another operator than the weights need is refused with both
// named. Weights are mapped from the file (Q, K and V stacked once at load) and packed
// for every kernel at load; forward allocates nothing once a workspace for its T
// exists (workspaces are sized for the modules' largest tuned T and grow, once, for a
// longer sequence; concurrent calls each take their own).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/bert.h"
#include "model/graph.h"

namespace dietcode::runtime {
class Module;
}

namespace dietcode::model {

struct ModelOptions {
  int64_t layers = 0;             // the first `layers` layers; 0: every layer in the weights
  bool retarget_to_host = false;  // refit modules tuned for an ISA this CPU lacks
  // Compiled kernels cached in <model_dir>/jit-cache (codegen/llvm/object_cache.h): a
  // second load skips code generation. Off: every load compiles.
  bool code_cache = true;
};

struct ModelLoadTimes {
  double modules_seconds = 0;  // reading module files and JIT-compiling their kernels
  double weights_seconds = 0;  // mapping the weights, stacking Q K V, packing for kernels
  // Code cache hits and misses: compiled objects, the kernels and each module's dispatcher.
  int64_t kernels_from_cache = 0, kernels_compiled = 0;
  // "1.31 s (modules read + JIT, kernels and dispatchers: 45 compiled, 0 from the code
  // cache)": the modules' part of a load, for the reports that print it.
  std::string describe_modules() const;
};

class Model {
 public:
  // Throws dietcode::Error naming the file and what is wrong: a missing module, a module
  // for another operator, weights missing or of the wrong shape.
  static Model load(const std::string& model_dir, const std::string& weights_path,
                    const ModelOptions& options = {});
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  // output = encoder(input), both [t, hidden] row-major. Throws dietcode::Error for
  // t < 1. Safe to call from several threads at once.
  void forward(const float* input, int64_t t, float* output) const;
  // forward, adding each node's seconds to node_seconds[node] (sized to the graph's nodes).
  void forward_profiled(const float* input, int64_t t, float* output,
                        std::vector<double>& node_seconds) const;
  // An operator's module (by its name: qkv, attention, out, ln, ffn1, ffn2) running one of
  // its kernels in place of the one its dispatch selects.
  struct KernelChoice {
    std::string module;
    int kernel = 0;
  };
  // forward_profiled with those choices: for timing a module's kernels inside the model,
  // where the operators around them have just run (workflow/refine_model.h). Throws
  // dietcode::Error for an unknown module or kernel.
  void forward_choosing(const float* input, int64_t t, float* output,
                        const std::vector<KernelChoice>& choices,
                        std::vector<double>& node_seconds) const;
  // The module of an operator by its name; throws dietcode::Error for another name.
  const runtime::Module& module(const std::string& name) const;
  // The names of the operators' modules, in graph order of first use.
  const std::vector<std::string>& module_names() const;

  const BertConfig& config() const;
  const Graph& graph() const;
  const ModelLoadTimes& load_times() const;
  // Memory the model holds: weights packed for its kernels and stacked Q K V where a kernel
  // reads them unpacked (the mapped file aside), and the workspaces (one per concurrent call, each
  // the memory plan's size for the longest T seen so far, at least the modules' largest tuned T).
  struct Memory {
    int64_t weight_bytes = 0;
    int64_t workspace_bytes = 0;
    int workspaces = 0;
    int64_t t_capacity = 0;
  };
  Memory memory() const;
  // "qkv: dense N=2304 K=768 ... (4 kernels)" per operator, for `dietcode run`.
  std::string describe() const;
  // The threads the modules were tuned for (the largest, should they differ).
  int tuned_threads() const;

 private:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  // kernel_of: per module (Impl::modules' order), the kernel to run, or -1 for its dispatch.
  void run(const float* input, int64_t t, float* output, std::vector<double>* node_seconds,
           const std::vector<int>* kernel_of = nullptr) const;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dietcode::model
