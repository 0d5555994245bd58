// A compiled kernel: one operator under one schedule, JIT-compiled for the host,
// callable with any shape, from several threads at once. Three schedule kinds compile
// through the same path (lower, JIT, the checked call): a contraction under a
// MicroKernelSchedule, a row operator (elementwise, LayerNorm, softmax) under a
// RowSchedule and fused attention under an AttentionSchedule; the kernel holds whichever
// it was given (`Kernel::Schedule`).
//
//   Kernel k = Kernel::compile(op, schedule);          // lower + JIT
//   AlignedBuffer w = k.prepack(shape, W);              // only if k.needs_prepack()
//   k.run(shape, {{x, nx}, {w.data(), w.size()}}, {y, ny});
//
// Inputs follow the operator's order; for a pre-packing schedule the packed input
// is passed in place of the original. Every call checks the shape and buffer sizes.
#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "codegen/llvm/target.h"
#include "lower/pipeline.h"
#include "runtime/buffer.h"
#include "schedule/any_schedule.h"
#include "te/tensor.h"

namespace dietcode::codegen {
class JitCode;
}

namespace dietcode::runtime {

struct ConstTensor {
  const float* data;
  int64_t elements;
};
struct MutableTensor {
  float* data;
  int64_t elements;
};

struct RunOptions {
  bool strict_ranges = false;  // refuse shapes outside the shape variables' declared ranges
};

class Kernel {
 public:
  // Checks the schedule against the host (throws dietcode::Error), lowers and
  // compiles it. The second form binds (validates) the schedule to the operator first.
  // `source_digest` (nonzero): a digest of what the operator and the schedule were made
  // from, under which an object cache in scope finds the compiled code without emitting
  // it (codegen::jit_compile); equal digests must mean equal operators and schedules.
  static Kernel compile(const schedule::BoundSchedule& bound, uint64_t source_digest = 0);
  static Kernel compile(const te::Operator& op, const schedule::MicroKernelSchedule& s);
  static Kernel compile(const schedule::BoundRowSchedule& bound, uint64_t source_digest = 0);
  static Kernel compile(const te::Operator& op, const schedule::RowSchedule& s);
  static Kernel compile(const schedule::BoundAttentionSchedule& bound, uint64_t source_digest = 0);
  static Kernel compile(const te::Operator& op, const schedule::AttentionSchedule& s);
  // Any kind (the one the operator is scheduled with; another is refused by bind).
  static Kernel compile(const te::Operator& op, const schedule::AnySchedule& s,
                        uint64_t source_digest = 0);

  // The schedule of any kind.
  using Schedule = schedule::AnySchedule;

  Kernel(Kernel&&) noexcept;
  Kernel& operator=(Kernel&&) noexcept;
  ~Kernel();

  void run(const std::vector<int64_t>& shape, const std::vector<ConstTensor>& inputs,
           MutableTensor output, const RunOptions& options = {}) const;

  bool needs_prepack() const { return lowered_.prepacked_b; }
  int prepacked_input() const { return lowered_.prepacked_input; }
  // Identifies the layout prepack() writes (a hash of the packing program): kernels with
  // the same id accept each other's packed buffers.
  uint64_t packed_layout() const { return packed_layout_; }
  // Floats ahead of the panels in a pre-packed buffer: a header that identifies the layout.
  static constexpr int64_t kPackedHeaderFloats = 16;
  // The element count of the pre-packed input for a shape (the header, then the panels).
  int64_t packed_size(const std::vector<int64_t>& shape) const;
  // Packs a constant input once, for every later call with this shape's constant dims.
  AlignedBuffer prepack(const std::vector<int64_t>& shape, ConstTensor source) const;

  const te::Operator& op() const { return op_; }
  const Schedule& any_schedule() const { return schedule_; }
  bool is_row_kernel() const { return std::holds_alternative<schedule::RowSchedule>(schedule_); }
  bool is_attention_kernel() const {
    return std::holds_alternative<schedule::AttentionSchedule>(schedule_);
  }
  // The schedule of a contraction kernel / of a row kernel / of an attention kernel;
  // asking a kernel for another kind is an internal error.
  const schedule::MicroKernelSchedule& schedule() const;
  const schedule::RowSchedule& row_schedule() const;
  const schedule::AttentionSchedule& attention_schedule() const;
  double compile_seconds() const { return compile_seconds_; }
  // The packing scratch (runtime/abi.h) one call takes on a thread at most: every panel
  // it allocates, 64-byte aligned, as if all were live at once.
  int64_t scratch_bytes() const { return scratch_bytes_; }

  // Inspection: each pass's loop IR, the LLVM IR, the assembly (any target).
  std::string loop_ir() const;
  std::string llvm_ir(bool optimized = true) const;
  std::string assembly(const codegen::CpuTarget& target) const;

 private:
  Kernel() = default;
  // What both kinds share once lowered: the JIT, the timing, the pass log.
  static Kernel build(const te::Operator& op, Schedule s, schedule::Isa isa,
                      const std::function<lower::LoweredKernel(const lower::PassLogger&)>& lower,
                      uint64_t source_digest);
  te::Operator op_;
  Schedule schedule_;
  uint64_t packed_layout_ = 0;  // identifies the packed layout in pre-packed buffers
  // Element counts of the inputs and the output, and the pre-packed payload, as programs
  // of the shape compiled once: a tree walk with hash lookups per call cost as much as a
  // small kernel (Q K^T at T = 1).
  std::vector<ir::IntProgram> buffer_elements_;
  ir::IntProgram packed_elements_;
  lower::LoweredKernel lowered_;
  std::string pass_log_;
  std::unique_ptr<codegen::JitCode> code_;
  double compile_seconds_ = 0;
  int64_t scratch_bytes_ = 0;
};

}  // namespace dietcode::runtime
