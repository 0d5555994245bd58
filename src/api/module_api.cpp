// The public API (include/dietcode/dietcode.h) over runtime::Module.
#include <fmt/ranges.h>

#include <cstdint>

#include "codegen/llvm/target.h"
#include "dietcode/dietcode.h"
#include "runtime/module.h"
#include "runtime/thread_pool.h"
#include "support/error.h"

namespace dietcode {

namespace {

class Packed : public PackedWeights {
 public:
  explicit Packed(runtime::PackedWeights w) : weights(std::move(w)) {}
  runtime::PackedWeights weights;
};

void check_pointer(const void* p, const std::string& what) {
  if (!p) user_error("{}: null pointer", what);
  if (reinterpret_cast<uintptr_t>(p) % alignof(float) != 0)
    user_error("{}: pointer {} is not aligned to {} bytes (a float array is expected)", what, p,
               alignof(float));
}

}  // namespace

struct Module::Impl {
  runtime::Module module;
  std::string path;
};

Module::Module(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Module::Module(Module&&) noexcept = default;
Module& Module::operator=(Module&&) noexcept = default;
Module::~Module() = default;

Module Module::load(const std::string& path, const LoadOptions& options) {
  runtime::ModuleSpec spec = runtime::load_module_spec(path);
  const schedule::Isa host = codegen::host_target().isa;
  if (!codegen::host_supports(spec.isa)) {
    if (!options.retarget_to_host)
      user_error(
          "{}: the module was tuned for {} ({}), which this CPU ({}) lacks; tune it again "
          "here, or load it with LoadOptions::retarget_to_host to refit its kernels to {}",
          path, to_string(spec.isa), runtime::info_text(spec.machine, "cpu_model", "another machine"),
          codegen::host_target().cpu, to_string(host));
    spec = runtime::retarget(spec, host);
  }
  if (options.threads < 0) user_error("LoadOptions::threads = {}: expected >= 0", options.threads);
  runtime::ThreadPool::global().set_num_threads(options.threads > 0 ? options.threads
                                                                    : spec.threads);
  auto impl = std::make_unique<Impl>(Impl{runtime::Module::compile(spec), path});
  return Module(std::move(impl));
}

std::string Module::describe() const {
  const runtime::ModuleSpec& s = impl_->module.spec();
  return s.op.describe() + ", " + std::to_string(s.kernels.size()) + " micro-kernels, " + std::string(to_string(s.isa));
}

std::vector<std::string> Module::shape_variables() const {
  std::vector<std::string> out;
  for (const te::ShapeVar& v : impl_->module.op().shape_vars) out.push_back(v.var.name());
  return out;
}

std::vector<std::string> Module::input_names() const {
  std::vector<std::string> out;
  for (const te::Input& i : impl_->module.op().inputs) out.push_back(i.tensor.name());
  return out;
}

std::vector<int64_t> Module::buffer_sizes(const std::vector<int64_t>& shape) const {
  const te::Operator& op = impl_->module.op();
  return op.buffer_sizes(op.bind(shape));
}

int Module::weights_input() const {
  const te::Operator& op = impl_->module.op();
  for (size_t i = 0; i < op.inputs.size(); ++i)
    if (op.inputs[i].constant) return int(i);
  return -1;
}

int Module::kernel_for(const std::vector<int64_t>& shape) const {
  impl_->module.op().bind(shape);  // checks the count and positivity
  return impl_->module.select(shape);
}

std::unique_ptr<PackedWeights> Module::prepack(const float* weights, int64_t elements) const {
  int w = weights_input();
  if (w < 0) user_error("{}: the operator has no constant weights to pack", impl_->path);
  check_pointer(weights, "weights");
  const te::Operator& op = impl_->module.op();
  std::vector<int64_t> any_shape;
  for (const te::ShapeVar& v : op.shape_vars) any_shape.push_back(v.min);
  return std::make_unique<Packed>(impl_->module.prepack(any_shape, {weights, elements}));
}

void Module::run(const std::vector<int64_t>& shape, const std::vector<Input>& inputs,
                 Output output, const PackedWeights* packed) const {
  const te::Operator& op = impl_->module.op();
  if (inputs.size() != op.inputs.size())
    user_error("{}: {} inputs given, expected {} ({})", op.name, inputs.size(), op.inputs.size(),
               fmt::format("{}", fmt::join(input_names(), ", ")));
  std::vector<runtime::ConstTensor> args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_pointer(inputs[i].data, "input " + op.inputs[i].tensor.name());
    args.push_back({inputs[i].data, inputs[i].elements});
  }
  check_pointer(output.data, "output");
  const Packed* p = nullptr;
  if (packed) {
    p = dynamic_cast<const Packed*>(packed);
    if (!p) user_error("{}: these packed weights were not made by Module::prepack", op.name);
  }
  impl_->module.run(shape, args, {output.data, output.elements}, p ? &p->weights : nullptr);
}

}  // namespace dietcode
