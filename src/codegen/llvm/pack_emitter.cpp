// A transposing pack (ir::PackStageNode whose source is contiguous along k, such as B of
// Q K^T stored [n, k]) as vector code: each group of 8 panel rows is read as 8 vectors
// along k, transposed in registers (three rounds of interleaving shuffles) and stored as
// 8 vectors along the panel's row direction. A scalar copy, as insert_packing would
// emit, costs two memory operations per element and dominated small attention products.
// Rows past row_limit are zeroed by a lane select (local padding); the k tail
// (k_extent % 8) is gathered one vector per k. A group with at most one valid row (T = 1)
// skips the transpose: one scalar load and one zero-extended vector store per k.
#include "codegen/llvm/codegen_llvm.h"

namespace dietcode::codegen {

using namespace ir;

namespace {

constexpr unsigned kLanes = 8;

// Interleaves the low or high halves of a and b: a0 b0 a1 b1 ... (one round of the
// perfect-shuffle transpose; three rounds transpose 8 vectors of 8).
llvm::Value* interleave(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, bool high) {
  std::vector<int> mask;
  for (unsigned l = 0; l < kLanes / 2; ++l) {
    unsigned lane = high ? l + kLanes / 2 : l;
    mask.push_back(static_cast<int>(lane));
    mask.push_back(static_cast<int>(kLanes + lane));
  }
  return b.CreateShuffleVector(x, y, mask);
}

}  // namespace

void emit_transposing_pack(FunctionEmitter& fe, const PackStageNode& p) {
  llvm::IRBuilder<>& b = fe.builder();
  llvm::Type* f32 = b.getFloatTy();
  llvm::VectorType* vt = llvm::FixedVectorType::get(f32, kLanes);
  const llvm::Align elem_align(4);
  auto imm = [&](int64_t v) { return b.getInt64(v); };
  auto gep = [&](llvm::Value* ptr, llvm::Value* i) { return b.CreateInBoundsGEP(f32, ptr, i); };

  const Expr flat = flatten_index(p.source, p.source_index);
  llvm::Value* k_begin = fe.emit(p.k_begin);
  llvm::Value* k_extent = fe.emit(p.k_extent);
  llvm::Value* row_begin = fe.emit(p.row_begin);
  llvm::Value* row_limit = fe.emit(p.row_limit);
  llvm::Value* width = imm(p.width);
  llvm::Value* panel = fe.element_ptr(p.panel, fe.emit(p.panel_offset));
  // The source address of (row, k_begin).
  auto source_row = [&](llvm::Value* row) {
    fe.bind_var(p.row, row);
    fe.bind_var(p.k, k_begin);
    llvm::Value* ptr = fe.element_ptr(p.source, fe.emit(flat));
    fe.unbind_var(p.row);
    fe.unbind_var(p.k);
    return ptr;
  };
  llvm::Value* n_panels =
      b.CreateSDiv(b.CreateAdd(fe.emit(p.row_extent), imm(p.width - 1)), imm(p.width));
  fe.emit_loop(
      imm(0), n_panels,
      [&](llvm::Value* pi) {
        llvm::Value* panel_base = gep(panel, b.CreateMul(pi, b.CreateMul(k_extent, width)));
        fe.emit_loop(
            imm(0), imm(p.width / kLanes),
            [&](llvm::Value* g) {
              llvm::Value* r0 = b.CreateAdd(
                  row_begin, b.CreateAdd(b.CreateMul(pi, width), b.CreateMul(g, imm(kLanes))));
              llvm::Value* dst = gep(panel_base, b.CreateMul(g, imm(kLanes)));
              auto dst_at = [&](llvm::Value* k, int64_t lane) {
                return gep(dst, b.CreateAdd(b.CreateMul(k, width), imm(lane)));
              };
              // A group with one valid row (T = 1, or the last row of an edge) or none
              // needs no transpose: one scalar, zero-extended to a vector, per k.
              llvm::Value* valid_rows = b.CreateSub(row_limit, r0);
              llvm::Function* fn = b.GetInsertBlock()->getParent();
              llvm::BasicBlock* narrow =
                  llvm::BasicBlock::Create(b.getContext(), "pack.narrow", fn);
              llvm::BasicBlock* wide = llvm::BasicBlock::Create(b.getContext(), "pack.wide", fn);
              llvm::BasicBlock* done = llvm::BasicBlock::Create(b.getContext(), "pack.done", fn);
              b.CreateCondBr(b.CreateICmpSLE(valid_rows, imm(1)), narrow, wide);
              b.SetInsertPoint(narrow);
              {
                // Two loops without a select inside: the row's scalar loaded into a
                // zeroed vector is one zero-extending load (vmovss) and one store per k.
                llvm::Value* zero = llvm::Constant::getNullValue(vt);
                llvm::BasicBlock* one_row =
                    llvm::BasicBlock::Create(b.getContext(), "pack.one", fn);
                llvm::BasicBlock* no_row =
                    llvm::BasicBlock::Create(b.getContext(), "pack.none", fn);
                b.CreateCondBr(b.CreateICmpEQ(valid_rows, imm(1)), one_row, no_row);
                b.SetInsertPoint(one_row);
                llvm::Value* row = source_row(r0);
                fe.emit_loop(
                    imm(0), k_extent,
                    [&](llvm::Value* k) {
                      llvm::Value* x = b.CreateAlignedLoad(f32, gep(row, k), elem_align);
                      b.CreateAlignedStore(b.CreateInsertElement(zero, x, b.getInt64(0)),
                                           dst_at(k, 0), elem_align);
                    },
                    "pack.k1");
                b.CreateBr(done);
                b.SetInsertPoint(no_row);
                fe.emit_loop(
                    imm(0), k_extent,
                    [&](llvm::Value* k) { b.CreateAlignedStore(zero, dst_at(k, 0), elem_align); },
                    "pack.k0");
              }
              b.CreateBr(done);
              b.SetInsertPoint(wide);
              // Rows at or past row_limit read the last valid row (a safe address) and
              // are zeroed by a lane select after the transpose.
              std::vector<llvm::Value*> rows;
              std::vector<llvm::Constant*> lane_ids;
              llvm::Value* last = b.CreateSub(row_limit, imm(1));
              for (unsigned i = 0; i < kLanes; ++i) {
                llvm::Value* row = b.CreateAdd(r0, imm(i));
                rows.push_back(
                    source_row(b.CreateSelect(b.CreateICmpSLT(row, row_limit), row, last)));
                lane_ids.push_back(b.getInt64(i));
              }
              llvm::Value* valid =
                  b.CreateICmpSLT(llvm::ConstantVector::get(lane_ids),
                                  b.CreateVectorSplat(kLanes, b.CreateSub(row_limit, r0)));
              llvm::Value* zero = llvm::Constant::getNullValue(vt);
              llvm::Value* k_vec = b.CreateSDiv(k_extent, imm(kLanes));
              fe.emit_loop(
                  imm(0), k_vec,
                  [&](llvm::Value* kb) {
                    llvm::Value* k = b.CreateMul(kb, imm(kLanes));
                    std::vector<llvm::Value*> v;
                    for (unsigned i = 0; i < kLanes; ++i)
                      v.push_back(b.CreateAlignedLoad(vt, gep(rows[i], k), elem_align));
                    for (int round = 0; round < 3; ++round) {
                      std::vector<llvm::Value*> next(kLanes);
                      for (unsigned i = 0; i < kLanes / 2; ++i) {
                        next[2 * i] = interleave(b, v[i], v[i + kLanes / 2], false);
                        next[2 * i + 1] = interleave(b, v[i], v[i + kLanes / 2], true);
                      }
                      v = next;
                    }
                    for (unsigned j = 0; j < kLanes; ++j)
                      b.CreateAlignedStore(b.CreateSelect(valid, v[j], zero),
                                           dst_at(b.CreateAdd(k, imm(j)), 0), elem_align);
                  },
                  "pack.kv");
              // The k tail: one vector of the 8 rows per k.
              fe.emit_loop(
                  b.CreateMul(k_vec, imm(kLanes)), k_extent,
                  [&](llvm::Value* k) {
                    llvm::Value* x = zero;
                    for (unsigned i = 0; i < kLanes; ++i)
                      x = b.CreateInsertElement(
                          x, b.CreateAlignedLoad(f32, gep(rows[i], k), elem_align), b.getInt64(i));
                    b.CreateAlignedStore(b.CreateSelect(valid, x, zero), dst_at(k, 0), elem_align);
                  },
                  "pack.kt");
              b.CreateBr(done);
              b.SetInsertPoint(done);
            },
            "pack.group");
      },
      "pack.panel");
}

}  // namespace dietcode::codegen
