#include "runtime/kernel.h"

#include <chrono>
#include <cstring>

#include "codegen/llvm/jit.h"
#include "ir/evaluate.h"
#include "ir/visit.h"
#include "runtime/abi.h"
#include "support/error.h"
#include "support/int_math.h"

namespace dietcode::runtime {

Kernel::Kernel(Kernel&&) noexcept = default;
Kernel& Kernel::operator=(Kernel&&) noexcept = default;
Kernel::~Kernel() = default;

namespace {

// Pre-packed weights start with a 64-byte header (keeping the payload 64-byte aligned)
// so that raw weights, or weights packed for another micro-kernel, passed where packed
// ones belong are refused instead of silently computing garbage.
constexpr int64_t kHeaderFloats = Kernel::kPackedHeaderFloats;
constexpr uint64_t kPackedMagic = 0x6B6361506F444344ULL;  // "DCDoPack"

struct PackedHeader {
  uint64_t magic;
  uint64_t layout;  // identifies the packed layout: the pre-packing program and packed size
};
static_assert(sizeof(PackedHeader) <= kHeaderFloats * sizeof(float));

uint64_t layout_id(uint64_t digest, int64_t packed_elements) {
  return (digest ^ static_cast<uint64_t>(packed_elements)) * 1099511628211ULL;
}

// `suffix` follows the buffer's name in messages (" (pre-packed)").
void check_tensor(const te::Operator& op, const std::string& name, const float* data,
                  int64_t elements, int64_t expected, const char* suffix = "") {
  if (!data) user_error("operator {}: buffer {}{} is a null pointer", op.name, name, suffix);
  if (elements != expected)
    user_error("operator {}: buffer {}{} has {} elements, expected {} for this shape", op.name,
               name, suffix, elements, expected);
}

// Generated code calls the runtime's C ABI (abi.h); the JIT is told where it lives here,
// once per process, so code generation needs nothing from the runtime.
void register_runtime_abi() {
  static const bool registered = [] {
    codegen::jit_define_symbols({
        {"dietcode_parallel_for", reinterpret_cast<void*>(&dietcode_parallel_for)},
        {"dietcode_alloc", reinterpret_cast<void*>(&dietcode_alloc)},
        {"dietcode_free", reinterpret_cast<void*>(&dietcode_free)},
    });
    return true;
  }();
  (void)registered;
}

}  // namespace

Kernel Kernel::compile(const te::Operator& op, const schedule::MicroKernelSchedule& s) {
  return compile(schedule::bind(s, op));
}

Kernel Kernel::compile(const te::Operator& op, const schedule::RowSchedule& s) {
  return compile(schedule::bind(s, op));
}

Kernel Kernel::compile(const te::Operator& op, const schedule::AttentionSchedule& s) {
  return compile(schedule::bind(s, op));
}

Kernel Kernel::compile(const te::Operator& op, const schedule::AnySchedule& s,
                       uint64_t source_digest) {
  return std::visit([&](const auto& x) { return compile(schedule::bind(x, op), source_digest); },
                    s);
}

Kernel Kernel::compile(const schedule::BoundSchedule& bound, uint64_t source_digest) {
  const schedule::MicroKernelSchedule& s = bound.schedule();
  return build(
      bound.op(), s, s.isa, [&](const lower::PassLogger& log) { return lower::lower(bound, log); },
      source_digest);
}

Kernel Kernel::compile(const schedule::BoundRowSchedule& bound, uint64_t source_digest) {
  const schedule::RowSchedule& s = bound.schedule();
  return build(
      bound.op(), s, s.isa, [&](const lower::PassLogger& log) { return lower::lower(bound, log); },
      source_digest);
}

Kernel Kernel::compile(const schedule::BoundAttentionSchedule& bound, uint64_t source_digest) {
  const schedule::AttentionSchedule& s = bound.schedule();
  return build(
      bound.op(), s, s.isa, [&](const lower::PassLogger& log) { return lower::lower(bound, log); },
      source_digest);
}

Kernel Kernel::build(const te::Operator& op, Schedule s, schedule::Isa isa,
                     const std::function<lower::LoweredKernel(const lower::PassLogger&)>& lower,
                     uint64_t source_digest) {
  if (!codegen::host_supports(isa))
    user_error("schedule targets {} but this CPU ({}) only supports {}", to_string(isa),
               codegen::host_target().cpu, to_string(codegen::host_target().isa));
  auto start = std::chrono::steady_clock::now();
  Kernel k;
  k.op_ = op;
  k.schedule_ = std::move(s);
  std::vector<ir::Var> vars;
  for (const te::ShapeVar& v : k.op_.shape_vars) vars.push_back(v.var);
  for (const te::Input& in : k.op_.inputs)
    k.buffer_elements_.emplace_back(ir::element_count(in.tensor), vars);
  k.buffer_elements_.emplace_back(ir::element_count(k.op_.compute.output), vars);
  k.lowered_ = lower([&](const std::string& pass, const std::string& ir) {
    k.pass_log_ += "// ---- after " + pass + "\n" + ir;
  });
  if (k.lowered_.prepacked_b) {
    k.packed_elements_ = ir::IntProgram(k.lowered_.packed_b_size, vars);
    // Hashed once here: runs are too short to hash on every call.
    k.packed_layout_ = lower::packed_layout_id(k.lowered_);
  }
  // Panels are sized by constants of the schedule, or by the shape variables at their
  // largest declared values.
  ir::Bindings at_max;
  for (const te::ShapeVar& v : k.op_.shape_vars) at_max[v.var.get()] = v.max;
  ir::visit_stmts(k.lowered_.compute.body, [&](const ir::Stmt& x) {
    if (const auto* a = x.as<ir::AllocateNode>())
      k.scratch_bytes_ += round_up(4 * ir::evaluate_int(a->buffer.shape()[0], at_max), 64);
  });
  register_runtime_abi();
  k.code_ = codegen::jit_compile(k.lowered_, source_digest);
  k.compile_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return k;
}

const schedule::MicroKernelSchedule& Kernel::schedule() const {
  const auto* s = std::get_if<schedule::MicroKernelSchedule>(&schedule_);
  DC_INTERNAL_CHECK(s, "kernel {} is not a contraction", op_.name);
  return *s;
}

const schedule::RowSchedule& Kernel::row_schedule() const {
  const auto* s = std::get_if<schedule::RowSchedule>(&schedule_);
  DC_INTERNAL_CHECK(s, "kernel {} is not a row kernel", op_.name);
  return *s;
}

const schedule::AttentionSchedule& Kernel::attention_schedule() const {
  const auto* s = std::get_if<schedule::AttentionSchedule>(&schedule_);
  DC_INTERNAL_CHECK(s, "kernel {} is not an attention kernel", op_.name);
  return *s;
}

void Kernel::run(const std::vector<int64_t>& shape, const std::vector<ConstTensor>& inputs,
                 MutableTensor output, const RunOptions& options) const {
  op_.check_shape(shape, options.strict_ranges);
  if (inputs.size() != op_.inputs.size())
    user_error("operator {}: got {} input buffers, expected {}", op_.name, inputs.size(),
               op_.inputs.size());
  // Small operators (all of this library's) check and pass their buffers without
  // allocating; a call is as short as a few hundred nanoseconds at T = 1.
  constexpr size_t kInline = 16;
  const size_t count = inputs.size() + 1;
  float* inline_pointers[kInline];
  std::vector<float*> heap_pointers(count > kInline ? count : 0);
  float** pointers = count > kInline ? heap_pointers.data() : inline_pointers;
  for (size_t i = 0; i < inputs.size(); ++i) {
    bool packed = needs_prepack() && static_cast<int>(i) == prepacked_input();
    if (!packed) {
      check_tensor(op_, op_.inputs[i].tensor.name(), inputs[i].data, inputs[i].elements,
                   buffer_elements_[i](shape.data()));
      pointers[i] = const_cast<float*>(inputs[i].data);  // generated code only reads inputs
      continue;
    }
    int64_t payload = packed_elements_(shape.data());
    const std::string& name = op_.inputs[i].tensor.name();
    check_tensor(op_, name, inputs[i].data, inputs[i].elements, payload + kHeaderFloats,
                 " (pre-packed)");
    PackedHeader header;
    std::memcpy(&header, inputs[i].data, sizeof header);
    if (header.magic != kPackedMagic)
      user_error(
          "operator {}: buffer {} (pre-packed) does not hold pre-packed weights; pass what "
          "Kernel::prepack returned",
          op_.name, name);
    if (header.layout != layout_id(packed_layout_, payload))
      user_error(
          "operator {}: buffer {} (pre-packed) was packed for another micro-kernel or shape; "
          "pack it with this kernel's prepack()",
          op_.name, name);
    pointers[i] = const_cast<float*>(inputs[i].data) + kHeaderFloats;
  }
  check_tensor(op_, op_.compute.output.name(), output.data, output.elements,
               buffer_elements_.back()(shape.data()));
  pointers[inputs.size()] = output.data;
  code_->compute()(shape.data(), pointers);
}

int64_t Kernel::packed_size(const std::vector<int64_t>& shape) const {
  if (!needs_prepack())
    user_error("operator {}: this schedule does not pre-pack an input", op_.name);
  return kHeaderFloats + ir::evaluate_int(lowered_.packed_b_size, op_.bind(shape));
}

AlignedBuffer Kernel::prepack(const std::vector<int64_t>& shape, ConstTensor source) const {
  ir::Bindings bindings = op_.bind(shape);
  if (!needs_prepack())
    user_error("operator {}: this schedule does not pre-pack an input", op_.name);
  const te::Input& in = op_.inputs[prepacked_input()];
  check_tensor(op_, in.tensor.name(), source.data, source.elements,
               ir::evaluate_int(ir::element_count(in.tensor), bindings));
  int64_t payload = ir::evaluate_int(lowered_.packed_b_size, bindings);
  AlignedBuffer packed(kHeaderFloats + payload);
  PackedHeader header{kPackedMagic, layout_id(packed_layout_, payload)};
  std::memset(packed.data(), 0, kHeaderFloats * sizeof(float));
  std::memcpy(packed.data(), &header, sizeof header);
  float* buffers[2] = {const_cast<float*>(source.data), packed.data() + kHeaderFloats};
  code_->prepack()(shape.data(), buffers);
  return packed;
}

std::string Kernel::loop_ir() const {
  return pass_log_;
}

std::string Kernel::llvm_ir(bool optimized) const {
  return codegen::llvm_ir_text(lowered_, codegen::host_target(), optimized);
}

std::string Kernel::assembly(const codegen::CpuTarget& target) const {
  return codegen::assembly_text(lowered_, target);
}

}  // namespace dietcode::runtime
