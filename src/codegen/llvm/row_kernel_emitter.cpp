// Explicit vector code for a group of rows of a row operator (ir::RowKernelNode).
//
// Every element expression is emitted as a vector of W lanes: columns base..base+W-1.
// Reads contiguous along the row become vector loads (masked in the tail), reads
// constant along it scalar loads and a splat; a stage's result or a reduction's total
// is a splat of its scalar. Reductions keep `unroll` independent accumulators per pass
// and row and end in a horizontal reduction; the tail lanes past the row length contribute
// the reduction's identity. The group's rows share every sweep over the columns: at each
// column step, the step of every row (emitted with that row's axes bound).
#include <llvm/IR/Intrinsics.h>

#include <unordered_map>

#include "codegen/llvm/codegen_llvm.h"
#include "codegen/llvm/vector_expr.h"
#include "ir/printer.h"
#include "support/error.h"

namespace dietcode::codegen {

using namespace ir;

namespace {

class RowKernelEmitter {
 public:
  RowKernelEmitter(FunctionEmitter& fe, const RowKernelNode& k)
      : fe_(fe),
        b_(fe.builder()),
        k_(k),
        width_(static_cast<unsigned>(k.vector_width)),
        vec_type_(llvm::FixedVectorType::get(b_.getFloatTy(), width_)) {}

  void emit() {
    length_ = fe_.emit(k_.length);
    // The row axes of each row of the group, computed once before the sweeps.
    llvm::Value* first = fe_.emit(k_.first_row);
    for (int64_t r = 0; r < k_.rows; ++r) {
      fe_.bind_var(k_.row, b_.CreateAdd(first, b_.getInt64(r), "", true, true));
      std::vector<llvm::Value*>& axes = row_axes_.emplace_back();
      for (const Expr& v : k_.row_axis_values) axes.push_back(fe_.emit(v));
    }
    fe_.unbind_var(k_.row);
    reduce_values_.resize(size_t(k_.rows));
    stage_values_.resize(size_t(k_.rows));

    int passes = k_.reductions.empty() ? 0 : k_.reductions.back().pass + 1;
    for (int p = 0; p < passes; ++p) emit_pass(p);
    sweep([&](llvm::Value* base, int, llvm::Value* mask) {
      for (int64_t r = 0; r < k_.rows; ++r) {
        bind_row(r);
        llvm::Value* ptr = output_ptr(base);
        llvm::Value* v;
        if (k_.reuse >= 0) {  // the reused pass stored the elements; scale them
          llvm::Value* stored = mask ? static_cast<llvm::Value*>(b_.CreateMaskedLoad(
                                           vec_type_, ptr, llvm::Align(4), mask,
                                           llvm::Constant::getNullValue(vec_type_)))
                                     : b_.CreateAlignedLoad(vec_type_, ptr, llvm::Align(4));
          v = b_.CreateFMul(stored, vec(k_.scale, k_.col, base, mask));
        } else {
          v = vec(k_.value, k_.col, base, mask);
        }
        store(v, ptr, mask);
      }
    });
    for (const Var& a : k_.row_axes) fe_.unbind_var(a);
  }

 private:
  // Emits what follows for row r of the group: its axes bound, its stages and totals read.
  void bind_row(int64_t r) {
    row_ = size_t(r);
    for (size_t d = 0; d < k_.row_axes.size(); ++d)
      fe_.bind_var(k_.row_axes[d], row_axes_[row_][d]);
  }

  llvm::Value* output_ptr(llvm::Value* base) {
    fe_.bind_var(k_.col, base);
    llvm::Value* ptr =
        fe_.element_ptr(k_.output, fe_.emit(flatten_index(k_.output, k_.output_index)));
    fe_.unbind_var(k_.col);
    return ptr;
  }
  void store(llvm::Value* v, llvm::Value* ptr, llvm::Value* mask) {
    if (mask)
      b_.CreateMaskedStore(v, ptr, llvm::Align(4), mask);
    else
      b_.CreateAlignedStore(v, ptr, llvm::Align(4));
  }

  llvm::Value* splat(llvm::Value* scalar) { return b_.CreateVectorSplat(width_, scalar); }
  llvm::Value* fconst(double v) { return llvm::ConstantFP::get(vec_type_, v); }
  llvm::Value* identity(ReduceOp op) {
    return fconst(op == ReduceOp::Sum ? 0.0 : -std::numeric_limits<double>::infinity());
  }
  // max as x > a ? x : a: one vmaxps on x86, where llvm.maxnum costs a NaN blend too; the
  // same value, since a (from the identity -inf) is never NaN: a NaN x is skipped either way.
  llvm::Value* combine(ReduceOp op, llvm::Value* a, llvm::Value* x) {
    if (op == ReduceOp::Sum) return b_.CreateFAdd(a, x);
    return b_.CreateSelect(b_.CreateFCmpOGT(x, a), x, a);
  }

  // Calls body(column base, accumulator index, mask or null) over the whole row:
  // `unroll` full vectors per step, then single full vectors, then one masked vector.
  void sweep(const std::function<void(llvm::Value*, int, llvm::Value*)>& body) {
    const int64_t w = k_.vector_width, u = k_.unroll;
    llvm::Value* zero = b_.getInt64(0);
    llvm::Value* steps = b_.CreateUDiv(length_, b_.getInt64(w * u));
    fe_.emit_loop(
        zero, steps,
        [&](llvm::Value* i) {
          llvm::Value* base = b_.CreateMul(i, b_.getInt64(w * u), "", true, true);
          for (int j = 0; j < u; ++j)
            body(b_.CreateAdd(base, b_.getInt64(j * w), "", true, true), j, nullptr);
        },
        "row_main");
    llvm::Value* full = b_.CreateUDiv(length_, b_.getInt64(w));
    if (u > 1)
      fe_.emit_loop(
          b_.CreateMul(steps, b_.getInt64(u)), full,
          [&](llvm::Value* i) {
            body(b_.CreateMul(i, b_.getInt64(w), "", true, true), 0, nullptr);
          },
          "row_vec");
    llvm::Value* base = b_.CreateMul(full, b_.getInt64(w));
    llvm::Value* rest = b_.CreateSub(length_, base);
    llvm::Function* f = fe_.function();
    llvm::BasicBlock* tail = llvm::BasicBlock::Create(b_.getContext(), "row_tail", f);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(b_.getContext(), "row_done", f);
    b_.CreateCondBr(b_.CreateICmpSGT(rest, zero), tail, done);
    b_.SetInsertPoint(tail);
    std::vector<llvm::Constant*> lanes;
    for (unsigned i = 0; i < width_; ++i) lanes.push_back(b_.getInt32(i));
    llvm::Value* mask = b_.CreateICmpSLT(llvm::ConstantVector::get(lanes),
                                         splat(b_.CreateTrunc(rest, b_.getInt32Ty())), "tail_mask");
    body(base, 0, mask);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  }

  void emit_pass(int pass) {
    std::vector<const RowReductionStage*> members;
    for (const RowReductionStage& r : k_.reductions)
      if (r.pass == pass) members.push_back(&r);
    const int64_t u = k_.unroll;
    // acc[row][member][j]: the accumulators of each row of the group.
    std::vector<std::vector<std::vector<llvm::Value*>>> acc(
        size_t(k_.rows), std::vector<std::vector<llvm::Value*>>(members.size()));
    for (auto& row_acc : acc)
      for (size_t m = 0; m < members.size(); ++m)
        for (int64_t j = 0; j < u; ++j) {
          row_acc[m].push_back(fe_.entry_alloca(vec_type_, 1, 64));
          b_.CreateStore(identity(members[m]->op), row_acc[m].back());
        }
    sweep([&](llvm::Value* base, int j, llvm::Value* mask) {
      for (int64_t row = 0; row < k_.rows; ++row) {
        bind_row(row);
        for (size_t m = 0; m < members.size(); ++m) {
          const RowReductionStage& r = *members[m];
          llvm::Value* v = vec(r.element, r.axis, base, mask);
          if (k_.reuse >= 0 && members[m] == &k_.reductions[size_t(k_.reuse)])
            store(v, output_ptr(base), mask);
          if (mask) v = b_.CreateSelect(mask, v, identity(r.op));
          llvm::Value* a = b_.CreateLoad(vec_type_, acc[size_t(row)][m][j]);
          b_.CreateStore(combine(r.op, a, v), acc[size_t(row)][m][j]);
        }
      }
    });
    for (int64_t row = 0; row < k_.rows; ++row) {
      bind_row(row);
      finish_pass(members, acc[size_t(row)]);
    }
  }

  // The totals of one row's reductions in this pass, then the stages they define.
  void finish_pass(const std::vector<const RowReductionStage*>& members,
                   const std::vector<std::vector<llvm::Value*>>& acc) {
    const int64_t u = k_.unroll;
    for (size_t m = 0; m < members.size(); ++m) {
      const RowReductionStage& r = *members[m];
      llvm::Value* total = b_.CreateLoad(vec_type_, acc[m][0]);
      for (int64_t j = 1; j < u; ++j)
        total = combine(r.op, total, b_.CreateLoad(vec_type_, acc[m][j]));
      llvm::Value* scalar;
      if (r.op == ReduceOp::Sum) {
        // Reassociation lets LLVM add the lanes as a tree (the order is ours to choose).
        auto* sum = b_.CreateFAddReduce(llvm::ConstantFP::get(b_.getFloatTy(), -0.0), total);
        llvm::FastMathFlags fmf;
        fmf.setAllowReassoc();
        llvm::cast<llvm::Instruction>(sum)->setFastMathFlags(fmf);
        scalar = sum;
      } else {
        // The lanes are never NaN (combine above), which lets the reduction be a vmaxps tree.
        auto* max = b_.CreateFPMaxReduce(total);
        llvm::FastMathFlags fmf;
        fmf.setNoNaNs();
        llvm::cast<llvm::Instruction>(max)->setFastMathFlags(fmf);
        scalar = max;
      }
      reduce_values_[row_][r.reduce.get()] = scalar;
      stage_values_[row_][r.result.get()] = b_.CreateExtractElement(
          vec(r.value, Var(), nullptr, nullptr), uint64_t(0), r.result.name());
    }
  }

  // The vector of `e` at columns base..base+W-1 of `col` (mask: lanes that exist).
  llvm::Value* vec(const Expr& e, const Var& col, llvm::Value* base, llvm::Value* mask) {
    return emit_vector_expr(b_, e, width_, [&](const Expr& x) -> llvm::Value* {
      switch (x.kind()) {
        case ExprKind::Reduce: {
          auto it = reduce_values_[row_].find(x.get());
          DC_INTERNAL_CHECK(it != reduce_values_[row_].end(),
                            "row kernel: reduction read before its pass");
          return splat(it->second);
        }
        case ExprKind::Load: {
          const auto* l = x.as<LoadNode>();
          if (auto it = stage_values_[row_].find(l->buffer.get()); it != stage_values_[row_].end())
            return splat(it->second);
          bool along_row = col.defined() && !l->indices.empty() &&
                           l->indices.back().get() == static_cast<const ExprNode*>(col.get());
          if (!along_row) return splat(fe_.emit(x));
          fe_.bind_var(col, base);
          llvm::Value* ptr =
              fe_.element_ptr(l->buffer, fe_.emit(flatten_index(l->buffer, l->indices)));
          fe_.unbind_var(col);
          if (mask)
            return b_.CreateMaskedLoad(vec_type_, ptr, llvm::Align(4), mask,
                                       llvm::Constant::getNullValue(vec_type_));
          return b_.CreateAlignedLoad(vec_type_, ptr, llvm::Align(4));
        }
        case ExprKind::Call:  // the integer-to-float conversion
          return splat(b_.CreateSIToFP(fe_.emit(x.as<CallNode>()->args[0]), b_.getFloatTy()));
        default:
          internal_error(__FILE__, __LINE__, "row kernel: cannot vectorize " + to_string(x));
      }
    });
  }

  FunctionEmitter& fe_;
  llvm::IRBuilder<>& b_;
  const RowKernelNode& k_;
  unsigned width_;
  llvm::FixedVectorType* vec_type_;
  llvm::Value* length_ = nullptr;
  // Per row of the group: its axes, its reductions' totals and its stages' values.
  std::vector<std::vector<llvm::Value*>> row_axes_;
  std::vector<std::unordered_map<const ExprNode*, llvm::Value*>> reduce_values_;
  std::vector<std::unordered_map<const BufferNode*, llvm::Value*>> stage_values_;
  size_t row_ = 0;  // the row being emitted (bind_row)
};

}  // namespace

void emit_row_kernel(FunctionEmitter& fe, const RowKernelNode& rk) {
  RowKernelEmitter(fe, rk).emit();
}

}  // namespace dietcode::codegen
