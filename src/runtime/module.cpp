#include "runtime/module.h"

#include <map>
#include <optional>

#include "codegen/llvm/object_cache.h"
#include "dispatch/dispatch_codegen.h"
#include "support/error.h"
#include "support/parallel_tasks.h"

namespace dietcode::runtime {

Module::Module(Module&&) noexcept = default;
Module& Module::operator=(Module&&) noexcept = default;
Module::~Module() = default;

namespace {

// The module's kernels, compiled on up to one thread per core: LLVM's code generation is
// most of a module's load time, and kernels share nothing while they compile. Every
// thread compiles under the caller's object cache.
std::vector<Kernel> compile_kernels(const te::Operator& op,
                                    const std::vector<schedule::AnySchedule>& schedules) {
  std::vector<std::optional<Kernel>> kernels(schedules.size());
  const std::string cache_dir = codegen::object_cache_dir();
  parallel_tasks(int(schedules.size()), [&](int i) {
    codegen::ObjectCacheScope cache(cache_dir);
    kernels[i] = Kernel::compile(op, schedules[i]);
  });
  std::vector<Kernel> out;
  for (std::optional<Kernel>& k : kernels) out.push_back(std::move(*k));
  return out;
}

}  // namespace

Module Module::compile(const ModuleSpec& spec) {
  Module m;
  m.spec_ = spec;
  m.op_ = spec.op.build();
  m.kernels_ = compile_kernels(m.op_, spec.kernels);
  m.dispatcher_ = dispatch::jit_compile_dispatcher(spec.dispatch);
  return m;
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
  int i = select(shape);
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
