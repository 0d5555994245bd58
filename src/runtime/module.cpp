#include "runtime/module.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "codegen/llvm/object_cache.h"
#include "dispatch/dispatch_codegen.h"
#include "support/error.h"
#include "support/hash.h"
#include "support/parallel_tasks.h"

namespace dietcode::runtime {

Module::Module(Module&&) noexcept = default;
Module& Module::operator=(Module&&) noexcept = default;
Module::~Module() = default;

Module Module::compile(const ModuleSpec& spec) {
  return std::move(compile_all({spec}).front());
}

std::vector<Module> Module::compile_all(const std::vector<ModuleSpec>& specs) {
  std::vector<Module> out;
  std::vector<std::vector<std::optional<Kernel>>> kernels(specs.size());
  std::vector<std::pair<size_t, size_t>> tasks;  // (module, kernel)
  for (size_t m = 0; m < specs.size(); ++m) {
    out.push_back(Module());
    out[m].spec_ = specs[m];
    out[m].op_ = specs[m].op.build();
    kernels[m].resize(specs[m].kernels.size());
    for (size_t k = 0; k < specs[m].kernels.size(); ++k) tasks.push_back({m, k});
  }
  // LLVM's code generation is most of a module's load time, and kernels share nothing
  // while they compile. Every thread compiles under the caller's object cache.
  const std::string cache_dir = codegen::object_cache_dir();
  // A kernel is known by its operator's spec and its schedule, from which this build
  // lowers and emits it the same way every time: a cached object is found by that digest
  // without emitting the kernel first (two thirds of a cached load's time).
  std::vector<std::string> op_json(specs.size());
  for (size_t m = 0; m < specs.size(); ++m) op_json[m] = ops::to_json(specs[m].op).dump();
  parallel_tasks(int(tasks.size()), [&](int i) {
    codegen::ObjectCacheScope cache(cache_dir);
    auto [m, k] = tasks[size_t(i)];
    Fnv1a source;
    source.add(op_json[m]);
    source.add("\n");
    source.add(schedule::to_json(specs[m].kernels[k]).dump());
    kernels[m][k] = Kernel::compile(out[m].op_, specs[m].kernels[k], source.value());
  });
  for (size_t m = 0; m < specs.size(); ++m) {
    for (std::optional<Kernel>& k : kernels[m]) out[m].kernels_.push_back(std::move(*k));
    out[m].dispatcher_ = dispatch::jit_compile_dispatcher(specs[m].dispatch);
  }
  return out;
}

int Module::select(const std::vector<int64_t>& shape) const {
  if (shape.size() != op_.shape_vars.size())
    user_error("operator {}: {} shape values given, expected {}", op_.name, shape.size(),
               op_.shape_vars.size());
  return dispatcher_->select(shape.data());
}

PackedWeights Module::prepack(const std::vector<int64_t>& shape, ConstTensor weights) const {
  PackedWeights w;
  // Kernels with the same packed layout (the same panel width and blocking) share one
  // buffer, packed once.
  std::map<uint64_t, std::shared_ptr<const AlignedBuffer>> by_layout;
  for (const Kernel& k : kernels_) {
    if (!k.needs_prepack()) {
      w.per_kernel.push_back(nullptr);
      continue;
    }
    std::shared_ptr<const AlignedBuffer>& packed = by_layout[k.packed_layout()];
    if (!packed) packed = std::make_shared<const AlignedBuffer>(k.prepack(shape, weights));
    w.per_kernel.push_back(packed);
  }
  return w;
}

bool PackedWeights::covers_every_kernel() const {
  return !per_kernel.empty() &&
         std::ranges::all_of(per_kernel, [](const auto& p) { return p != nullptr; });
}

int64_t PackedWeights::bytes() const {
  int64_t total = 0;
  for (size_t i = 0; i < per_kernel.size(); ++i) {
    bool seen = false;
    for (size_t j = 0; j < i; ++j) seen = seen || per_kernel[j] == per_kernel[i];
    if (per_kernel[i] && !seen) total += int64_t(sizeof(float)) * per_kernel[i]->size();
  }
  return total;
}

namespace {

// The inputs of a call of pre-packed weights, per thread, reused from call to call.
std::vector<ConstTensor>& call_arguments() {
  thread_local std::vector<ConstTensor> args = [] {
    std::vector<ConstTensor> v;
    v.reserve(16);
    return v;
  }();
  return args;
}

}  // namespace

void prepare_calling_thread(int64_t scratch_bytes) {
  call_arguments();
  reserve_scratch(scratch_bytes);
}

int64_t Module::scratch_bytes() const {
  int64_t most = 0;
  for (const Kernel& k : kernels_) most = std::max(most, k.scratch_bytes());
  return most;
}

void Module::run(const std::vector<int64_t>& shape, const std::vector<ConstTensor>& inputs,
                 MutableTensor output, const PackedWeights* packed) const {
  run_kernel(select(shape), shape, inputs, output, packed);
}

void Module::run_kernel(int i, const std::vector<int64_t>& shape,
                        const std::vector<ConstTensor>& inputs, MutableTensor output,
                        const PackedWeights* packed) const {
  if (i < 0 || i >= num_kernels())
    user_error("operator {}: kernel {} asked for; the module has {}", op_.name, i, num_kernels());
  const Kernel& k = kernels_[i];
  if (!k.needs_prepack()) return k.run(shape, inputs, output);
  if (!packed || packed->per_kernel.size() != kernels_.size())
    user_error(
        "operator {}: kernel {} of this module reads pre-packed weights: call Module::prepack "
        "once and pass the result to run",
        op_.name, i);
  // The caller's inputs with the packed weights in place of W, in a per-thread buffer
  // reused from call to call (no allocation on the per-call path).
  std::vector<ConstTensor>& args = call_arguments();
  args.assign(inputs.begin(), inputs.end());
  int w = k.prepacked_input();
  if (w < 0 || w >= int(args.size()))
    user_error("operator {}: {} inputs given, expected {}", op_.name, args.size(),
               op_.inputs.size());
  if (!packed->per_kernel[i])
    user_error("operator {}: kernel {} reads pre-packed weights, but none were packed for it",
               op_.name, i);
  args[w] = {packed->per_kernel[i]->data(), packed->per_kernel[i]->size()};
  k.run(shape, args, output);
}

}  // namespace dietcode::runtime
