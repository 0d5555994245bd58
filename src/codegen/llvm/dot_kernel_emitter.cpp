// Explicit vector code for an MR x NR tile of dot products (ir::MicroKernelNode with
// `dot`): C[i][j] (+)= sum over k of A[i][k] * B[j][k], A's rows and B's columns read in
// place, both with unit stride along k (Q K^T of attention: a query row against a key row).
//
// The k-loop keeps MR * NR accumulators in SSA values, each a vector of W partial sums
// along k; each step loads MR vectors of A and NR of B and does MR * NR FMAs, unrolled
// unroll_k times (a tile of few accumulators keeps several copies of them, so that its FMAs
// do not wait on each other's latency). A last partial vector of k loads masked, touching
// no element past the k block. Each accumulator is then summed across its lanes.
//
// Rows past m_valid and columns past n_valid read the last valid row / column (a safe
// address) and so compute, and store, exactly what it does: the same value written to the
// same element again. The tile needs no masks and no branches at its edges.
#include <llvm/IR/Intrinsics.h>

#include <map>

#include "codegen/llvm/codegen_llvm.h"
#include "codegen/llvm/vector_expr.h"
#include "ir/printer.h"
#include "support/error.h"

namespace dietcode::codegen {

using namespace ir;

void emit_dot_micro_kernel(FunctionEmitter& fe, const MicroKernelNode& mk) {
  llvm::IRBuilder<>& b = fe.builder();
  llvm::LLVMContext& ctx = b.getContext();
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  const unsigned W = static_cast<unsigned>(mk.vector_width);
  const int64_t MR = mk.mr, NR = mk.nr, N_ACC = MR * NR;
  llvm::Type* f32 = b.getFloatTy();
  llvm::VectorType* vt = llvm::FixedVectorType::get(f32, W);
  llvm::Function* fma = llvm::Intrinsic::getDeclaration(&fe.module(), llvm::Intrinsic::fma, {vt});
  auto gep = [&](llvm::Value* p, llvm::Value* i) { return b.CreateInBoundsGEP(f32, p, i); };
  auto imm = [&](int64_t v) { return b.getInt64(v); };
  const llvm::Align elem_align(4);

  const MicroKernelOperands ops = emit_micro_kernel_operands(fe, mk);
  llvm::Value *m_valid = ops.m_valid, *n_valid = ops.n_valid, *k_extent = ops.k_extent;
  llvm::Value *a_base = ops.a_base, *a_row_stride = ops.a_row_stride;
  llvm::Value *b_base = ops.b_base, *b_col_stride = ops.b_row_stride;
  llvm::Value *c_base = ops.c_base, *ldc = ops.ldc, *first = ops.first, *last = ops.last;

  // Row i and column j of the tile, clamped to the last valid one.
  auto clamped = [&](int64_t i, llvm::Value* valid) {
    return b.CreateSelect(b.CreateICmpSLT(imm(i), valid), imm(i), b.CreateSub(valid, imm(1)));
  };
  std::vector<llvm::Value*> rows, cols, a_rows, b_cols;
  for (int64_t i = 0; i < MR; ++i) {
    rows.push_back(clamped(i, m_valid));
    a_rows.push_back(gep(a_base, b.CreateMul(rows[i], a_row_stride)));
  }
  for (int64_t j = 0; j < NR; ++j) {
    cols.push_back(clamped(j, n_valid));
    b_cols.push_back(gep(b_base, b.CreateMul(cols[j], b_col_stride)));
  }

  // One step of W along k at element offset `k`: MR * NR FMAs into `acc` ([i * NR + j]).
  // All MR vectors of A live with one of B at a time, or all NR of B with one of A,
  // whichever needs fewer registers (schedule::dot_tile_registers). With `mask`, lanes off
  // in it are neither loaded nor added.
  using Acc = std::vector<llvm::Value*>;
  auto k_step = [&](llvm::Value* k, Acc& acc, llvm::Value* mask) {
    auto load = [&](llvm::Value* row) -> llvm::Value* {
      llvm::Value* p = gep(row, k);
      if (!mask) return b.CreateAlignedLoad(vt, p, elem_align);
      return b.CreateMaskedLoad(vt, p, elem_align, mask, llvm::Constant::getNullValue(vt));
    };
    auto fma_into = [&](int64_t i, int64_t j, llvm::Value* x, llvm::Value* y) {
      acc[i * NR + j] = b.CreateCall(fma, {x, y, acc[i * NR + j]});
    };
    if (MR <= NR) {
      std::vector<llvm::Value*> av(MR);
      for (int64_t i = 0; i < MR; ++i) av[i] = load(a_rows[i]);
      for (int64_t j = 0; j < NR; ++j) {
        llvm::Value* bv = load(b_cols[j]);
        for (int64_t i = 0; i < MR; ++i) fma_into(i, j, av[i], bv);
      }
    } else {
      std::vector<llvm::Value*> bv(NR);
      for (int64_t j = 0; j < NR; ++j) bv[j] = load(b_cols[j]);
      for (int64_t i = 0; i < MR; ++i) {
        llvm::Value* av = load(a_rows[i]);
        for (int64_t j = 0; j < NR; ++j) fma_into(i, j, av, bv[j]);
      }
    }
  };

  // Copies of the accumulators: enough chains for the FMAs in flight (as in the outer-
  // product micro-kernel), at most one per unrolled step. The loops carry them all.
  constexpr int64_t kFmasInFlight = 8;
  const int64_t copies =
      std::min(mk.unroll_k, std::max<int64_t>(1, (kFmasInFlight + N_ACC - 1) / N_ACC));
  const int64_t unroll = mk.unroll_k;
  auto flatten = [&](const std::vector<Acc>& c) {
    FunctionEmitter::Carried out;
    for (const Acc& a : c) out.insert(out.end(), a.begin(), a.end());
    return out;
  };
  auto unflatten = [&](const FunctionEmitter::Carried& flat) {
    std::vector<Acc> out(copies);
    for (int64_t c = 0; c < copies; ++c)
      out[c].assign(flat.begin() + c * N_ACC, flat.begin() + (c + 1) * N_ACC);
    return out;
  };
  std::vector<Acc> acc(copies, Acc(N_ACC, llvm::Constant::getNullValue(vt)));
  // Whole unrolled groups of W * unroll, then whole vectors, then the masked rest.
  llvm::Value* wide = imm(int64_t(W) * unroll);
  llvm::Value* groups = b.CreateSDiv(k_extent, wide);
  if (unroll > 1)
    acc = unflatten(fe.emit_loop(
        imm(0), groups, flatten(acc),
        [&](llvm::Value* g, const FunctionEmitter::Carried& in) {
          std::vector<Acc> x = unflatten(in);
          llvm::Value* k0 = b.CreateMul(g, wide);
          for (int64_t u = 0; u < unroll; ++u)
            k_step(b.CreateAdd(k0, imm(u * W), "", false, true), x[u % copies], nullptr);
          return flatten(x);
        },
        "dot.k.unrolled"));
  llvm::Value* vectors = b.CreateSDiv(k_extent, imm(W));
  acc = unflatten(fe.emit_loop(
      unroll > 1 ? b.CreateMul(groups, imm(unroll)) : imm(0), vectors, flatten(acc),
      [&](llvm::Value* v, const FunctionEmitter::Carried& in) {
        std::vector<Acc> x = unflatten(in);
        k_step(b.CreateMul(v, imm(W)), x[0], nullptr);
        return flatten(x);
      },
      "dot.k.rest"));
  llvm::Value* k_done = b.CreateMul(vectors, imm(W));
  llvm::Value* k_left = b.CreateSub(k_extent, k_done);
  {
    llvm::BasicBlock* pre = b.GetInsertBlock();
    llvm::BasicBlock* tail = llvm::BasicBlock::Create(ctx, "dot.k.tail", fn);
    llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx, "dot.k.join", fn);
    b.CreateCondBr(b.CreateICmpSGT(k_left, imm(0)), tail, join);
    b.SetInsertPoint(tail);
    std::vector<llvm::Constant*> lanes;
    for (unsigned l = 0; l < W; ++l) lanes.push_back(b.getInt32(l));
    llvm::Value* mask =
        b.CreateICmpSLT(llvm::ConstantVector::get(lanes),
                        b.CreateVectorSplat(W, b.CreateTrunc(k_left, b.getInt32Ty())));
    Acc masked = acc[0];
    k_step(k_done, masked, mask);
    llvm::BasicBlock* tail_end = b.GetInsertBlock();
    b.CreateBr(join);
    b.SetInsertPoint(join);
    for (int64_t x = 0; x < N_ACC; ++x) {
      llvm::PHINode* p = b.CreatePHI(vt, 2);
      p->addIncoming(acc[0][x], pre);
      p->addIncoming(masked[x], tail_end);
      acc[0][x] = p;
    }
  }

  // Sums across the copies, then across the lanes: each group of four accumulators of a
  // row (a zero vector filling a short group) goes through two levels of pairwise adds
  // within 128-bit blocks (the horizontal add of x86), which leaves block l holding the
  // four accumulators' sums over their lanes in block l; the blocks are then added. About
  // 2.5 instructions per sum for a row of 4 or 8, against 6 for one accumulator alone.
  std::vector<llvm::Value*> sum(N_ACC);
  for (int64_t x = 0; x < N_ACC; ++x) {
    sum[x] = acc[0][x];
    for (int64_t c = 1; c < copies; ++c) sum[x] = b.CreateFAdd(sum[x], acc[c][x]);
  }
  auto pairwise = [&](llvm::Value* p, llvm::Value* q) {
    std::vector<int> even, odd;  // within each block of 4: p0+p1, p2+p3, q0+q1, q2+q3
    for (unsigned blk = 0; blk < W; blk += 4)
      for (unsigned src : {0u, W}) {
        for (unsigned l : {0u, 2u}) {
          even.push_back(int(src + blk + l));
          odd.push_back(int(src + blk + l + 1));
        }
      }
    return b.CreateFAdd(b.CreateShuffleVector(p, q, even), b.CreateShuffleVector(p, q, odd));
  };
  auto block = [&](llvm::Value* v, unsigned blk) {
    return b.CreateShuffleVector(
        v, std::vector<int>{int(4 * blk), int(4 * blk + 1), int(4 * blk + 2), int(4 * blk + 3)});
  };
  if (W >= 4 && W % 4 == 0) {
    llvm::Value* zero = llvm::Constant::getNullValue(vt);
    for (int64_t i = 0; i < MR; ++i)
      for (int64_t j0 = 0; j0 < NR; j0 += 4) {
        llvm::Value* g[4];
        for (int64_t j = 0; j < 4; ++j) g[j] = j0 + j < NR ? sum[i * NR + j0 + j] : zero;
        llvm::Value* h = pairwise(pairwise(g[0], g[1]), pairwise(g[2], g[3]));
        llvm::Value* four = block(h, 0);
        for (unsigned blk = 1; blk < W / 4; ++blk) four = b.CreateFAdd(four, block(h, blk));
        for (int64_t j = 0; j < 4 && j0 + j < NR; ++j)
          sum[i * NR + j0 + j] = b.CreateExtractElement(four, uint64_t(j));
      }
  } else {
    llvm::FastMathFlags reassoc;
    reassoc.setAllowReassoc();
    for (int64_t x = 0; x < N_ACC; ++x) {
      llvm::Value* r = b.CreateFAddReduce(llvm::ConstantFP::getNegativeZero(f32), sum[x]);
      llvm::cast<llvm::Instruction>(r)->setFastMathFlags(reassoc);
      sum[x] = r;
    }
  }

  // C: every element loaded (past the first k block) before any is stored, since edge
  // elements alias the last valid one.
  std::vector<llvm::Value*> c_ptrs(N_ACC);
  for (int64_t i = 0; i < MR; ++i) {
    llvm::Value* row = gep(c_base, b.CreateMul(rows[i], ldc));
    for (int64_t j = 0; j < NR; ++j) c_ptrs[i * NR + j] = gep(row, cols[j]);
  }
  auto either = [&](llvm::Value* cond, const char* name,
                    const std::function<std::vector<llvm::Value*>()>& then,
                    const std::vector<llvm::Value*>& otherwise) {
    llvm::BasicBlock* pre = b.GetInsertBlock();
    llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx, std::string(name) + ".then", fn);
    llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx, std::string(name) + ".join", fn);
    b.CreateCondBr(cond, then_bb, join);
    b.SetInsertPoint(then_bb);
    std::vector<llvm::Value*> x = then();
    llvm::BasicBlock* then_end = b.GetInsertBlock();
    b.CreateBr(join);
    b.SetInsertPoint(join);
    std::vector<llvm::Value*> out(otherwise.size());
    for (size_t i = 0; i < out.size(); ++i) {
      llvm::PHINode* p = b.CreatePHI(f32, 2);
      p->addIncoming(x[i], then_end);
      p->addIncoming(otherwise[i], pre);
      out[i] = p;
    }
    return out;
  };
  sum = either(
      b.CreateNot(first), "dot.c.add",
      [&] {
        std::vector<llvm::Value*> out(N_ACC);
        for (int64_t x = 0; x < N_ACC; ++x)
          out[x] = b.CreateFAdd(sum[x], b.CreateAlignedLoad(f32, c_ptrs[x], elem_align));
        return out;
      },
      sum);

  // Epilogue on the last k block, one element at a time (a one-lane vector expression),
  // its inputs read at the element's clamped row and column.
  if (mk.epilogue.defined()) {
    sum = either(
        last, "dot.epilogue",
        [&] {
          std::vector<llvm::Value*> out(N_ACC);
          llvm::VectorType* one = llvm::FixedVectorType::get(f32, 1);
          auto as_vector = [&](llvm::Value* scalar) {
            return b.CreateInsertElement(llvm::PoisonValue::get(one), scalar, uint64_t(0));
          };
          std::vector<llvm::Value*> bases, strides;
          for (const EpilogueOperand& o : mk.epilogue_inputs) {
            bases.push_back(fe.element_ptr(o.buffer, fe.emit(o.offset)));
            strides.push_back(fe.emit(o.row_stride));
          }
          for (int64_t i = 0; i < MR; ++i)
            for (int64_t j = 0; j < NR; ++j) {
              llvm::Value* v =
                  emit_vector_expr(b, mk.epilogue, 1, [&](const Expr& e) -> llvm::Value* {
                    const auto* var = e.as<VarNode>();
                    DC_INTERNAL_CHECK(var, "dot micro-kernel epilogue: cannot emit {}",
                                      to_string(e));
                    if (var == mk.product.get()) return as_vector(sum[i * NR + j]);
                    for (size_t x = 0; x < mk.epilogue_inputs.size(); ++x) {
                      const EpilogueOperand& o = mk.epilogue_inputs[x];
                      if (var != o.value.get()) continue;
                      llvm::Value* p = gep(bases[x], b.CreateMul(rows[i], strides[x]));
                      if (o.along_n) p = gep(p, cols[j]);
                      return as_vector(b.CreateAlignedLoad(f32, p, elem_align));
                    }
                    internal_error(__FILE__, __LINE__,
                                   "dot micro-kernel epilogue: unbound " + var->name);
                  });
              out[i * NR + j] = b.CreateExtractElement(v, uint64_t(0));
            }
          return out;
        },
        sum);
  }
  for (int64_t x = 0; x < N_ACC; ++x) b.CreateAlignedStore(sum[x], c_ptrs[x], elem_align);
}

}  // namespace dietcode::codegen
