// Loop IR -> LLVM IR. Each LoweredFunc becomes
//
//   void name(const int64_t* shape, float* const* buffers)
//
// Parallel loops are outlined into `void body(int64_t index, void* closure)` and
// handed to dietcode_parallel_for; allocations call dietcode_alloc/free (the runtime's C
// ABI, whose addresses the runtime gives the JIT through jit_define_symbols).
// MicroKernel nodes are emitted as explicit vector code by micro_kernel_emitter.cpp.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <memory>
#include <unordered_map>

#include "codegen/llvm/target.h"
#include "ir/stmt.h"
#include "lower/pipeline.h"

namespace dietcode::codegen {

// Emits the functions of a lowered kernel into a new module. Function names are
// `prefix` + "compute" and `prefix` + "prepack".
std::unique_ptr<llvm::Module> emit_module(llvm::LLVMContext& ctx, const lower::LoweredKernel& k,
                                          const CpuTarget& target, const std::string& prefix);

// The state of emitting one function, shared with the micro-kernel emitter.
class FunctionEmitter {
 public:
  FunctionEmitter(llvm::Module& module, const CpuTarget& target);

  // Emits `f` as a function named `name`.
  void emit_function(const lower::LoweredFunc& f, const std::string& name);

  llvm::Value* emit(const ir::Expr& e);
  void emit(const ir::Stmt& s);

  llvm::IRBuilder<>& builder() { return b_; }
  llvm::Module& module() { return module_; }
  llvm::Function* function() { return function_; }
  // Gives `var` a value for the expressions emitted until unbind_var (the column of a
  // vector sweep, say).
  void bind_var(const ir::Var& var, llvm::Value* value) { vars_[var.get()] = value; }
  void unbind_var(const ir::Var& var) { vars_.erase(var.get()); }
  llvm::Value* buffer(const ir::Buffer& buf);
  // Gives a scratch buffer (a stack array, say) its address until unbind_buffer.
  void bind_buffer(const ir::Buffer& buf, llvm::Value* ptr) { buffers_[buf.get()] = ptr; }
  void unbind_buffer(const ir::Buffer& buf) { buffers_.erase(buf.get()); }
  llvm::Value* element_ptr(const ir::Buffer& buf, llvm::Value* flat_index);
  // An alloca in the function's entry block (so it is allocated once per call).
  llvm::Value* entry_alloca(llvm::Type* type, uint64_t count, uint64_t align);
  // Emits `for (i = begin; i < end; ++i) body(i)` and leaves the builder after it.
  void emit_loop(llvm::Value* begin, llvm::Value* end,
                 const std::function<void(llvm::Value*)>& body, const char* name);
  // The same with values carried from one iteration to the next as phi nodes (registers,
  // not memory: the pipeline runs no mem2reg): body(i, values) returns their next values.
  // Returns their values after the loop (`init` when it runs no iteration).
  using Carried = std::vector<llvm::Value*>;
  Carried emit_loop(llvm::Value* begin, llvm::Value* end, const Carried& init,
                    const std::function<Carried(llvm::Value*, const Carried&)>& body,
                    const char* name);

 private:
  void emit_for(const ir::ForNode& f);
  void emit_parallel_for(const ir::ForNode& f);
  llvm::Function* new_function(const std::string& name, llvm::FunctionType* type);

  llvm::Module& module_;
  llvm::LLVMContext& ctx_;
  const CpuTarget& target_;
  llvm::IRBuilder<> b_;
  llvm::Function* function_ = nullptr;
  int outlined_count_ = 0;
  std::string function_name_;
  ir::Expr work_;  // the function's operations per call (LoweredFunc::work), or undefined
  std::unordered_map<const ir::VarNode*, llvm::Value*> vars_;
  std::unordered_map<const ir::BufferNode*, llvm::Value*> buffers_;
};

// What both forms of the micro-kernel start from (micro_kernel_emitter.cpp): the tile's
// valid rows and columns, its k extent, each operand's first element and strides (B's row
// stride steps between its columns in the dot-product form), C's, and the k-block flags.
struct MicroKernelOperands {
  llvm::Value *m_valid, *n_valid, *k_extent;
  llvm::Value *a_base, *a_row_stride, *a_k_stride;
  llvm::Value *b_base, *b_row_stride, *b_k_stride;
  llvm::Value* b_vector_stride;  // between the W-wide vectors of B's row (MicroKernelNode)
  llvm::Value *c_base, *ldc, *first, *last;
  llvm::Value* prefetch_next_offset;  // null: none (MicroKernelNode::prefetch_next_offset)
  llvm::Value* prefetch_next_spread;  // null: the first line only (MicroKernelNode)
  // null: the lines at prefetch_next_offset from B's row; else spread over the calls
  // (MicroKernelNode::prefetch_next_rate): the call's first row of its share.
  llvm::Value *prefetch_next_start, *prefetch_next_rate;
};
MicroKernelOperands emit_micro_kernel_operands(FunctionEmitter& fe, const ir::MicroKernelNode& mk);

// Emits the register-tiled micro-kernel (micro_kernel_emitter.cpp).
void emit_micro_kernel(FunctionEmitter& fe, const ir::MicroKernelNode& mk);
// Emits a micro-kernel of dot products (MicroKernelNode::dot; dot_kernel_emitter.cpp).
void emit_dot_micro_kernel(FunctionEmitter& fe, const ir::MicroKernelNode& mk);
// Emits a pack stage whose source is contiguous along k as 8x8 in-register transposes
// (pack_emitter.cpp); insert_packing leaves such stages to code generation.
void emit_transposing_pack(FunctionEmitter& fe, const ir::PackStageNode& p);

// Emits one row of a row operator as vector code (row_kernel_emitter.cpp).
void emit_row_kernel(FunctionEmitter& fe, const ir::RowKernelNode& rk);

// Emits one query tile of fused attention as vector code (attention_emitter.cpp).
void emit_attention_kernel(FunctionEmitter& fe, const ir::AttentionKernelNode& k);

}  // namespace dietcode::codegen
