// The public C++ API of the DietCode runtime: load a module tuned by `dietcode tune`,
// pre-pack its constant weights once, and run it on any shape, declared or not, from
// several threads at once. Links the runtime (and LLVM, to JIT the module's kernels for
// this CPU); never the tuner. For a library without LLVM, see `dietcode export`.
//
//   dietcode::Module m = dietcode::Module::load("qkv.module.json");
//   auto w = m.prepack(weights, m.buffer_sizes({128})[1]);
//   m.run({seq_len}, {{x, seq_len * 768}, {weights, 2304 * 768}}, {y, seq_len * 2304}, w.get());
//
// Every call checks its arguments and throws dietcode::Error naming what is wrong.
//
// A whole BERT encoder (a model directory from `dietcode tune bert-base`):
//
//   dietcode::Model bert = dietcode::Model::load("dietcode-out/bert-base", "bert.safetensors");
//   bert.forward(seq_len, {x, seq_len * bert.hidden()}, {y, seq_len * bert.hidden()});
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dietcode/error.h"

namespace dietcode {

struct LoadOptions {
  // A module tuned for an ISA this CPU lacks (AVX-512 on an AVX2 machine) is refused;
  // with this set, its micro-kernels are refitted to the host's registers instead
  // (correct, but not tuned for this machine: tune again for speed).
  bool retarget_to_host = false;
  int threads = 0;  // threads for parallel loops; 0: the module's tuned count
};

struct Input {
  const float* data;
  int64_t elements;
};
struct Output {
  float* data;
  int64_t elements;
};

// Weights packed for every micro-kernel of one module (opaque).
class PackedWeights {
 public:
  virtual ~PackedWeights() = default;
};

class Module {
 public:
  // Throws dietcode::Error for a missing, truncated, corrupt or foreign module file, or
  // a module for an ISA this CPU lacks (unless options.retarget_to_host).
  static Module load(const std::string& path, const LoadOptions& options = {});
  Module(Module&&) noexcept;
  Module& operator=(Module&&) noexcept;
  ~Module();

  // "dense N=2304 K=768 M=1..128 epilogue=none, 6 micro-kernels, avx512"
  std::string describe() const;
  // Names of the shape variables ({"M"}), of the inputs in call order, and the element
  // counts of every input and then the output for a shape.
  std::vector<std::string> shape_variables() const;
  std::vector<std::string> input_names() const;
  std::vector<int64_t> buffer_sizes(const std::vector<int64_t>& shape) const;
  // The input holding the constant weights (-1 if the operator has none).
  int weights_input() const;
  // The micro-kernel a shape dispatches to (index into the module's kernels).
  int kernel_for(const std::vector<int64_t>& shape) const;

  // Packs the weights (the input weights_input()) for every kernel that wants them
  // packed; pass the result to run(). Call once per set of weights.
  std::unique_ptr<PackedWeights> prepack(const float* weights, int64_t elements) const;
  // Computes the operator for `shape`. Inputs in input_names() order, the raw weights
  // included. `packed` comes from prepack() for these weights; it is required when the
  // kernel for this shape reads packed weights.
  void run(const std::vector<int64_t>& shape, const std::vector<Input>& inputs, Output output,
           const PackedWeights* packed = nullptr) const;

 private:
  struct Impl;
  explicit Module(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct ModelOptions {
  int64_t layers = 0;             // run the first `layers` layers; 0: all in the weights
  int threads = 0;                // threads for parallel loops; 0: the modules' tuned count
  bool retarget_to_host = false;  // as LoadOptions::retarget_to_host
  bool code_cache = true;         // compiled kernels cached in <model_dir>/jit-cache
};

// A BERT encoder: the tuned modules of a model directory, the weights of a safetensors
// file with the usual checkpoint names (the architecture is read from them), and a
// workspace planned once. forward allocates nothing once a workspace for its length
// exists, and may be called from several threads at once.
class Model {
 public:
  // Throws dietcode::Error for a missing or foreign module, weights missing, of the wrong
  // shape or dtype, a truncated file, or modules for another model size.
  static Model load(const std::string& model_dir, const std::string& weights_path,
                    const ModelOptions& options = {});
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  int64_t hidden() const;
  int64_t layers() const;
  // "12 layers, hidden 768, 12 heads, ffn 3072, tuned for T in 1..128" and one line per
  // operator's module.
  std::string describe() const;
  // output = encoder(input) for a sequence of `seq_len` >= 1 tokens (any length, inside
  // or past the tuned range); both buffers hold seq_len * hidden() floats, row-major.
  void forward(int64_t seq_len, Input input, Output output) const;

 private:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dietcode
