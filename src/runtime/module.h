// A tuned module: the selected micro-kernels of one operator and the decision tree
// that dispatches any shape to one of them. ModuleSpec is the data (what a module
// file holds); Module is its compiled, callable form.
//
//   ModuleSpec spec = load_module_spec("dense.dcm");
//   Module m = Module::compile(spec);                 // JIT every kernel + the dispatcher
//   PackedWeights w = m.prepack(W);                   // constant weights, once
//   m.run({seq_len}, {{x, nx}, {W, nw}}, {y, ny}, &w); // any shape, from any thread
//
// The runtime never depends on the tuner: a module is produced by `dietcode tune`
// and only read here.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dispatch/decision_tree.h"
#include "ops/spec.h"
#include "runtime/kernel.h"

namespace dietcode::dispatch {
class CompiledDispatcher;
}

namespace dietcode::runtime {

constexpr int kModuleFormatVersion = 1;

struct ModuleSpec {
  ops::OperatorSpec op;
  schedule::Isa isa = schedule::Isa::Avx2;     // the vector ISA the kernels need
  int threads = 1;                             // threads the module was tuned for
  std::vector<schedule::AnySchedule> kernels;  // of the operator's kind
  dispatch::DecisionTree dispatch;
  nlohmann::json machine;     // the CPU it was tuned on (informative)
  nlohmann::json provenance;  // records digest, dates, tool version, trials
};

// A text entry of a module's informative objects (machine, provenance): the string, or
// the value printed as JSON, or `fallback` when absent.
std::string info_text(const nlohmann::json& object, const char* key, const std::string& fallback);

nlohmann::json to_json(const ModuleSpec& m);
// Throws dietcode::Error naming the field that is wrong (`what` prefixes messages).
ModuleSpec module_spec_from_json(const nlohmann::json& j, const std::string& what = "module");
// Files: writes atomically (temporary file, fsync, rename); reads with errors that
// name the file.
void save_module_spec(const ModuleSpec& m, const std::string& path);
ModuleSpec load_module_spec(const std::string& path);

// The module with every kernel refitted to another vector ISA (e.g. an AVX-512 module on
// an AVX2 host): same tiles where the registers allow, smaller ones where not. Correct
// for every shape; not tuned for the new machine.
ModuleSpec retarget(const ModuleSpec& m, schedule::Isa isa);

// Constant weights pre-packed for every kernel of a module that wants them. Kernels that
// pack them the same way (the same panel width and blocking) share one buffer.
struct PackedWeights {
  // Null where a kernel reads raw weights.
  std::vector<std::shared_ptr<const AlignedBuffer>> per_kernel;
  int64_t bytes() const;  // the distinct buffers together
  // Every kernel reads packed weights: the raw ones are not read again.
  bool covers_every_kernel() const;
};

// Creates the calling thread's runtime state: its packing scratch (at least
// `scratch_bytes`, Module::scratch_bytes) and its argument list for kernels of pre-packed
// weights, so that module calls on this thread allocate nothing. Allocates only the first
// time on a thread (and when asked for more scratch than before); a model calls it at
// the start of every forward.
void prepare_calling_thread(int64_t scratch_bytes);
// The part of it that is the scratch (scratch.cpp).
void reserve_scratch(int64_t bytes);

class Module {
 public:
  // Compiles every kernel and the dispatcher for the host. Throws dietcode::Error if
  // the host lacks the module's ISA.
  static Module compile(const ModuleSpec& spec);
  // Several modules (a model's), their kernels compiled together on up to one thread per
  // core: one after another, each module's last kernels would compile with cores idle.
  static std::vector<Module> compile_all(const std::vector<ModuleSpec>& specs);
  Module(Module&&) noexcept;
  Module& operator=(Module&&) noexcept;
  ~Module();

  // The kernel index a shape dispatches to (native decision tree).
  int select(const std::vector<int64_t>& shape) const;
  const Kernel& kernel(int i) const { return kernels_.at(i); }
  int num_kernels() const { return static_cast<int>(kernels_.size()); }
  const ModuleSpec& spec() const { return spec_; }
  const te::Operator& op() const { return op_; }
  // The most packing scratch one call of any kernel takes (Kernel::scratch_bytes).
  int64_t scratch_bytes() const;

  // Packs the operator's constant input (the weights) for every kernel that wants it.
  // `shape` is any valid shape (the weights do not depend on the symbolic dims).
  PackedWeights prepack(const std::vector<int64_t>& shape, ConstTensor weights) const;
  // Runs the kernel the shape dispatches to. Inputs in the operator's order with the
  // raw weights; if `packed` is given, kernels that pre-pack use it instead.
  void run(const std::vector<int64_t>& shape, const std::vector<ConstTensor>& inputs,
           MutableTensor output, const PackedWeights* packed = nullptr) const;
  // Runs kernel `kernel` whatever the shape dispatches to (any kernel of a module computes
  // every shape): for comparing a module's kernels where it runs (model::Model's
  // KernelChoice). Throws dietcode::Error for an index out of range.
  void run_kernel(int kernel, const std::vector<int64_t>& shape,
                  const std::vector<ConstTensor>& inputs, MutableTensor output,
                  const PackedWeights* packed = nullptr) const;

 private:
  Module() = default;
  ModuleSpec spec_;
  te::Operator op_;
  std::vector<Kernel> kernels_;
  std::unique_ptr<dispatch::CompiledDispatcher> dispatcher_;
};

}  // namespace dietcode::runtime
