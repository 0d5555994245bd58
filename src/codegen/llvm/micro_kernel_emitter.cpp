// Explicit vector code for the MR x NR register tile (ir::MicroKernelNode).
//
// The k-loop keeps MR * NR/W accumulators in SSA values (phi nodes), so they live
// in vector registers; each k-step is NR/W vector loads of B, MR scalar broadcasts
// of A and MR * NR/W FMAs, unrolled unroll_k times, with no branches and no bounds
// checks (a small tile keeps several copies of its accumulators in the unrolled loop, so
// that its FMAs do not wait on each other's latency). Edge tiles work on C in place too: a
// tile of m_valid < MR rows runs as passes of sub-tiles (schedule::edge_passes; its last
// pass, which the plan may make taller than the rows left, runs as exactly those rows),
// columns past n_valid are masked when C is loaded and not stored (the vector that
// straddles n_valid goes out lane by lane). B read in place (no panel) gets a second k-loop
// for edge column blocks whose loads are masked (llvm.masked.load) so that no lane past the
// tensor's end is touched; B pre-packed in panels one vector wide gets one whose vectors
// past the last panel re-read that panel.
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

#include <functional>
#include <map>
#include <tuple>

#include "codegen/llvm/codegen_llvm.h"
#include "codegen/llvm/vector_expr.h"
#include "ir/printer.h"
#include "ir/visit.h"
#include "schedule/isa.h"
#include "support/error.h"

namespace dietcode::codegen {

using namespace ir;

namespace {

using Tile = std::vector<std::vector<llvm::Value*>>;  // [row][vector]

// An epilogue that calls a transcendental function (GELU, tanh, exp) is a few dozen
// instructions per vector: emitted on the registers of every row of every pass it was
// most of a kernel's code (a 9 x 48 tile with bias + GELU: ~1900 of its ~2700 FMAs) and of
// its compile time.
bool epilogue_after_store(const Expr& epilogue) {
  bool costly = false;
  visit_exprs(epilogue, [&](const Expr& e) {
    if (const auto* call = e.as<CallNode>())
      costly |= call->op == CallOp::Gelu || call->op == CallOp::GeluTanh ||
                call->op == CallOp::Tanh || call->op == CallOp::Exp;
  });
  return costly;
}

}  // namespace

MicroKernelOperands emit_micro_kernel_operands(FunctionEmitter& fe, const MicroKernelNode& mk) {
  MicroKernelOperands o;
  o.m_valid = fe.emit(mk.m_valid);
  o.n_valid = fe.emit(mk.n_valid);
  o.k_extent = fe.emit(mk.k_extent);
  o.a_base = fe.element_ptr(mk.a.buffer, fe.emit(mk.a.offset));
  o.a_row_stride = fe.emit(mk.a.row_stride);
  o.a_k_stride = fe.emit(mk.a.k_stride);
  o.b_base = fe.element_ptr(mk.b.buffer, fe.emit(mk.b.offset));
  o.b_row_stride = fe.emit(mk.b.row_stride);
  o.b_k_stride = fe.emit(mk.b.k_stride);
  o.b_vector_stride =
      fe.emit(mk.b_vector_stride.defined() ? mk.b_vector_stride : Expr(mk.vector_width));
  o.c_base = fe.element_ptr(mk.c, fe.emit(mk.c_offset));
  o.ldc = fe.emit(mk.c_row_stride);
  o.first = fe.emit(mk.first_k_block);
  o.last = fe.emit(mk.last_k_block);
  o.prefetch_next_offset =
      mk.prefetch_next_offset.defined() ? fe.emit(mk.prefetch_next_offset) : nullptr;
  o.prefetch_next_spread =
      mk.prefetch_next_spread.defined() ? fe.emit(mk.prefetch_next_spread) : nullptr;
  o.prefetch_next_rate = o.prefetch_next_start = nullptr;
  if (mk.prefetch_next_rate.defined()) {
    o.prefetch_next_rate = fe.emit(mk.prefetch_next_rate);
    // The call's first row of its share of the next tile's rows, scaled by
    // 2^kPrefetchRateShift.
    o.prefetch_next_start =
        fe.builder().CreateMul(fe.emit(mk.prefetch_next_first), o.prefetch_next_rate);
  }
  return o;
}

namespace {

// `then` where cond holds, else `otherwise`, both continuing after; `weights`: the
// branch's weights, or null.
void emit_if(llvm::IRBuilder<>& b, llvm::Value* cond, const char* name, llvm::MDNode* weights,
             const std::function<void()>& then, const std::function<void()>& otherwise) {
  llvm::LLVMContext& ctx = b.getContext();
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx, std::string(name) + ".then", fn);
  llvm::BasicBlock* else_bb = llvm::BasicBlock::Create(ctx, std::string(name) + ".else", fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, std::string(name) + ".done", fn);
  b.CreateCondBr(cond, then_bb, else_bb, weights);
  b.SetInsertPoint(then_bb);
  then();
  b.CreateBr(done);
  b.SetInsertPoint(else_bb);
  otherwise();
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

// Lane masks of the valid columns of an NR-wide row (lanes at or past n_valid off), one per
// vector of W lanes.
std::vector<llvm::Value*> n_tail_masks(llvm::IRBuilder<>& b, llvm::Value* n_valid, int64_t NR,
                                       unsigned W) {
  // 32-bit lanes: one vector register per mask on AVX2 (64-bit lanes would take two).
  std::vector<llvm::Constant*> lanes;
  for (unsigned l = 0; l < W; ++l) lanes.push_back(b.getInt32(l));
  llvm::Value* lane_index = llvm::ConstantVector::get(lanes);
  llvm::Value* n32 = b.CreateTrunc(
      b.CreateSelect(b.CreateICmpSLT(n_valid, b.getInt64(NR)), n_valid, b.getInt64(NR)),
      b.getInt32Ty());
  std::vector<llvm::Value*> masks;
  for (int64_t v = 0; v < NR / W; ++v)
    masks.push_back(b.CreateICmpSLT(
        lane_index, b.CreateVectorSplat(W, b.CreateSub(n32, b.getInt32(int32_t(v * W))))));
  return masks;
}

// The first `count` lanes of `value` (0 < count < its width) to dst one by one through
// `slot` (a stack slot of one vector): a masked store (vmaskmovps) is microcoded and slow
// on AMD cores.
void store_lanes(FunctionEmitter& fe, llvm::Value* slot, llvm::Value* value, llvm::Value* dst,
                 llvm::Value* count) {
  llvm::IRBuilder<>& b = fe.builder();
  llvm::Type* f32 = b.getFloatTy();
  b.CreateAlignedStore(value, slot, llvm::Align(32));
  fe.emit_loop(
      b.getInt64(0), count,
      [&](llvm::Value* j) {
        b.CreateAlignedStore(
            b.CreateAlignedLoad(f32, b.CreateInBoundsGEP(f32, slot, j), llvm::Align(4)),
            b.CreateInBoundsGEP(f32, dst, j), llvm::Align(4));
      },
      "store.lane");
}

// mk.epilogue's inputs at the rows of a tile whose first row is row0, and the epilogue of
// one vector of the tile.
class EpilogueEmitter {
 public:
  struct Input {
    const EpilogueOperand* operand;
    llvm::Value* base;  // the tile's first row
    llvm::Value* row_stride;
    bool same_row;  // row stride 0: one value per column for the whole tile
  };

  EpilogueEmitter(FunctionEmitter& fe, const MicroKernelNode& mk, llvm::Value* row0)
      : b_(fe.builder()), mk_(mk) {
    for (const EpilogueOperand& o : mk.epilogue_inputs) {
      llvm::Value* stride = fe.emit(o.row_stride);
      llvm::Value* base = fe.element_ptr(o.buffer, fe.emit(o.offset));
      inputs_.push_back({&o,
                         b_.CreateInBoundsGEP(b_.getFloatTy(), base, b_.CreateMul(row0, stride)),
                         stride, is_const(o.row_stride, 0)});
    }
  }

  const std::vector<Input>& inputs() const { return inputs_; }

  // Input x's pointer to row i of the tile.
  llvm::Value* row(size_t x, llvm::Value* i) {
    const Input& in = inputs_[x];
    return in.same_row
               ? in.base
               : b_.CreateInBoundsGEP(b_.getFloatTy(), in.base, b_.CreateMul(i, in.row_stride));
  }

  // Input x's vector v at `row` (its pointer to that row), lanes off in n_mask reading zero.
  llvm::Value* load(size_t x, llvm::Value* row, int64_t v, llvm::Value* n_mask) {
    const unsigned W = static_cast<unsigned>(mk_.vector_width);
    llvm::Type* f32 = b_.getFloatTy();
    if (!inputs_[x].operand->along_n)
      return b_.CreateVectorSplat(W, b_.CreateAlignedLoad(f32, row, llvm::Align(4)));
    llvm::VectorType* vt = llvm::FixedVectorType::get(f32, W);
    return b_.CreateMaskedLoad(vt, b_.CreateInBoundsGEP(f32, row, b_.getInt64(v * W)),
                               llvm::Align(4), n_mask, llvm::Constant::getNullValue(vt));
  }

  // mk.epilogue of one vector: `product` for the product, input(x) for input x.
  llvm::Value* apply(llvm::Value* product, const std::function<llvm::Value*(size_t)>& input) {
    return emit_vector_expr(b_, mk_.epilogue, mk_.vector_width, [&](const Expr& e) -> llvm::Value* {
      const auto* var = e.as<VarNode>();
      DC_INTERNAL_CHECK(var, "micro-kernel epilogue: cannot vectorize {}", to_string(e));
      if (var == mk_.product.get()) return product;
      for (size_t x = 0; x < inputs_.size(); ++x)
        if (var == inputs_[x].operand->value.get()) return input(x);
      internal_error(__FILE__, __LINE__, "micro-kernel epilogue: unbound " + var->name);
    });
  }

 private:
  llvm::IRBuilder<>& b_;
  const MicroKernelNode& mk_;
  std::vector<Input> inputs_;
};

// One register tile of MR rows, rows row0 .. row0 + MR - 1 of the micro-kernel's operands
// (the tile's own height, or a pass over an edge: see emit_passes). MR is a constant, so
// every row is one base plus a constant offset (a row chosen at run time took a register
// each, and an 8 x 48 tile's accumulators spilled).
void emit_tile(FunctionEmitter& fe, const MicroKernelNode& mk, const MicroKernelOperands& ops,
               const int64_t MR, llvm::Value* row0) {
  llvm::IRBuilder<>& b = fe.builder();
  llvm::LLVMContext& ctx = b.getContext();
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  const unsigned W = static_cast<unsigned>(mk.vector_width);
  const int64_t NR = mk.nr, V = NR / W;
  llvm::Type* f32 = b.getFloatTy();
  llvm::Type* i64 = b.getInt64Ty();
  llvm::VectorType* vt = llvm::FixedVectorType::get(f32, W);
  llvm::Function* fma = llvm::Intrinsic::getDeclaration(&fe.module(), llvm::Intrinsic::fma, {vt});
  auto gep = [&](llvm::Value* p, llvm::Value* i) { return b.CreateInBoundsGEP(f32, p, i); };
  auto imm = [&](int64_t v) { return b.getInt64(v); };
  const llvm::Align elem_align(4);

  llvm::Value *n_valid = ops.n_valid, *k_extent = ops.k_extent;
  llvm::Value *a_base = ops.a_base, *a_row_stride = ops.a_row_stride, *a_k_stride = ops.a_k_stride;
  llvm::Value *b_base = ops.b_base, *b_k_stride = ops.b_k_stride;
  llvm::Value* b_vector_stride = ops.b_vector_stride;
  llvm::Value *c_base = ops.c_base, *ldc = ops.ldc, *first = ops.first, *last = ops.last;

  // Row i of a sub-tile starting at row0 lies i strides past the sub-tile's first row:
  // with a constant stride every row is one base plus a constant (no register per row).
  auto first_row = [&](llvm::Value* base, llvm::Value* stride) {
    return gep(base, b.CreateMul(row0, stride));
  };
  auto row_of = [&](llvm::Value* first, llvm::Value* stride, int64_t i) {
    return gep(first, b.CreateMul(imm(i), stride));
  };
  llvm::Value* a_first = first_row(a_base, a_row_stride);
  std::vector<llvm::Value*> a_rows;
  for (int64_t i = 0; i < MR; ++i) a_rows.push_back(row_of(a_first, a_row_stride, i));

  // The tile works on C in place. Columns past n_valid are masked when C is loaded and
  // never stored (see the stores at the end).
  llvm::Value* c_first = first_row(c_base, ldc);
  std::vector<llvm::Value*> c_rows;
  for (int64_t i = 0; i < MR; ++i) c_rows.push_back(row_of(c_first, ldc, i));
  llvm::Value* n_full = b.CreateICmpEQ(n_valid, imm(NR));
  // Edge tiles (a partial column block) are rare: their branches are marked cold, so that
  // the register allocator favours the full tile's k-loop (an edge k-loop's lane masks
  // take registers; without the hint its spills leaked into the full tile's loop).
  llvm::MDNode* edges_rare = llvm::MDBuilder(ctx).createBranchWeights(1000, 1);
  auto branch = [&](llvm::Value* cond, const char* name, const std::function<void()>& then,
                    const std::function<void()>& otherwise) {
    emit_if(b, cond, name, edges_rare, then, otherwise);
  };

  auto c_ptr = [&](int64_t i, int64_t v) { return gep(c_rows[i], imm(v * W)); };
  // Two ways to the same tile: `then` where cond holds, else `otherwise`, joined by phis.
  // `weights`: branch weights when one way is known to be rare (edges_rare: `then` is the
  // common way).
  auto either = [&](llvm::Value* cond, const char* name, const std::function<Tile()>& then,
                    const std::function<Tile()>& otherwise, llvm::MDNode* weights = nullptr) {
    llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx, std::string(name) + ".then", fn);
    llvm::BasicBlock* else_bb = llvm::BasicBlock::Create(ctx, std::string(name) + ".else", fn);
    llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx, std::string(name) + ".join", fn);
    b.CreateCondBr(cond, then_bb, else_bb, weights);
    b.SetInsertPoint(then_bb);
    Tile x = then();
    llvm::BasicBlock* then_end = b.GetInsertBlock();
    b.CreateBr(join);
    b.SetInsertPoint(else_bb);
    Tile y = otherwise();
    llvm::BasicBlock* else_end = b.GetInsertBlock();
    b.CreateBr(join);
    b.SetInsertPoint(join);
    Tile out(MR, std::vector<llvm::Value*>(V));
    for (int64_t i = 0; i < MR; ++i)
      for (int64_t v = 0; v < V; ++v) {
        llvm::PHINode* p = b.CreatePHI(vt, 2);
        p->addIncoming(x[i][v], then_end);
        p->addIncoming(y[i][v], else_end);
        out[i][v] = p;
      }
    return out;
  };
  auto tail_masks = [&] { return n_tail_masks(b, n_valid, NR, W); };
  // Accumulators start at zero on the first k-block, else from the tile.
  Tile init = either(
      first, "acc.init",
      [&] { return Tile(MR, std::vector<llvm::Value*>(V, llvm::Constant::getNullValue(vt))); },
      [&] {
        return either(
            n_full, "acc.load",
            [&] {
              Tile loaded(MR, std::vector<llvm::Value*>(V));
              for (int64_t i = 0; i < MR; ++i)
                for (int64_t v = 0; v < V; ++v)
                  loaded[i][v] = b.CreateAlignedLoad(vt, c_ptr(i, v), elem_align);
              return loaded;
            },
            [&] {
              std::vector<llvm::Value*> masks = tail_masks();
              Tile loaded(MR, std::vector<llvm::Value*>(V));
              for (int64_t i = 0; i < MR; ++i)
                for (int64_t v = 0; v < V; ++v)
                  loaded[i][v] = b.CreateMaskedLoad(vt, c_ptr(i, v), elem_align, masks[v],
                                                    llvm::Constant::getNullValue(vt));
              return loaded;
            },
            edges_rare);
      });

  // One k-step: NR/W loads of B, MR broadcasts of A, MR * NR/W FMAs; B first (all its
  // vectors live, one broadcast at a time) or, for tiles wider than tall, A first (all
  // broadcasts live, one B vector at a time): schedule::tile_registers.
  // B read in place (mk.b_in_place) masks its loads on an edge column block: `b_masks`
  // holds one lane mask per vector then, and is empty for the unmasked loop.
  std::vector<llvm::Value*> b_masks;
  // With mk.prefetch_b, each k-step (unmasked) also prefetches the lines of B's row that
  // many steps ahead into L1 (one per 64-byte line of a contiguous row, one per vector of a
  // row in vector-wide panels); a prefetch past the end of B is a hint that never faults.
  llvm::Function* prefetch =
      mk.prefetch_b > 0 || ops.prefetch_next_offset
          ? llvm::Intrinsic::getDeclaration(fn->getParent(), llvm::Intrinsic::prefetch,
                                            {b_base->getType()})
          : nullptr;
  const int64_t floats_per_line = 16;
  const bool b_paneled = mk.b_vector_stride.defined();
  // B in vector-wide panels: an edge column block reads its vectors past n_valid from the
  // last panel it owns (`b_panel_offsets`, empty for full blocks: vector v at v * stride).
  // Panels are zero-padded to a whole vector, so every read stays inside the panels, no
  // load is masked, and the columns read twice are never stored.
  std::vector<llvm::Value*> b_panel_offsets;
  auto b_vector = [&](llvm::Value* row, int64_t v) {
    if (!b_paneled) return gep(row, imm(v * W));
    if (!b_panel_offsets.empty()) return gep(row, b_panel_offsets[v]);
    return gep(row, b.CreateMul(imm(v), b_vector_stride));
  };
  auto edge_panel_offsets = [&] {
    llvm::Value* last = b.CreateSub(b.CreateSDiv(b.CreateAdd(n_valid, imm(W - 1)), imm(W)), imm(1));
    std::vector<llvm::Value*> offsets;
    for (int64_t v = 0; v < V; ++v) {
      llvm::Value* panel = b.CreateSelect(b.CreateICmpSLT(imm(v), last), imm(v), last);
      offsets.push_back(b.CreateMul(panel, b_vector_stride));
    }
    return offsets;
  };
  // In vector-wide panels consecutive k-steps read a panel 64 bytes apart: the instruction
  // scheduler clusters such loads (SelectionDAG's neighbouring-load clustering: the
  // unrolled steps' first vectors issued at once), keeping 3 more vectors live and
  // spilling a full tile's accumulators. Each unrolled step's row index goes through an
  // empty inline asm (`opaque`: no instruction), so no two steps' loads share a base the
  // scheduler can see.
  llvm::InlineAsm* opaque =
      b_paneled
          ? llvm::InlineAsm::get(llvm::FunctionType::get(b.getInt64Ty(), {b.getInt64Ty()}, false),
                                 "", "=r,0", /*hasSideEffects=*/false)
          : nullptr;
  const int64_t registers = schedule::vector_isa_of_width(W).registers;
  llvm::InlineAsm* after_b =
      b_paneled && MR + V + MR * V > registers
          ? llvm::InlineAsm::get(
                llvm::FunctionType::get(b.getInt64Ty(), {b.getInt64Ty(), vt}, false), "", "=r,0,x",
                /*hasSideEffects=*/false)
          : nullptr;
  // Spread over the calls: a row of the next tile per k-step, not per iteration (the k-loops
  // of a call with fewer row tiles than k-steps per iteration: prefetch_next_spread).
  bool spread_rows = false;
  // `b_k`: B's row index when it differs from k's value as the scheduler sees it.
  auto k_step = [&](llvm::Value* k, Tile& acc, llvm::Value* b_k = nullptr) {
    llvm::Value* b_row = gep(b_base, b.CreateMul(b_k ? b_k : k, b_k_stride));
    // This k-step's lines of the B the tile loops read next, into L2 (locality 2:
    // prefetcht1): one address, the others at constant distances from it.
    if (ops.prefetch_next_offset && !ops.prefetch_next_rate && b_masks.empty()) {
      llvm::Value* next = gep(b_row, ops.prefetch_next_offset);
      b.CreateCall(prefetch, {b_vector(next, 0), b.getInt32(0), b.getInt32(2), b.getInt32(1)});
    }
    if (mk.prefetch_b > 0 && b_masks.empty()) {
      llvm::Value* ahead = gep(b_row, b.CreateMul(imm(mk.prefetch_b), b_k_stride));
      if (b_paneled)
        for (int64_t v = 0; v < V; ++v)
          b.CreateCall(prefetch, {b_vector(ahead, v), b.getInt32(0), b.getInt32(3), b.getInt32(1)});
      else
        for (int64_t f = 0; f < NR; f += floats_per_line)
          b.CreateCall(prefetch, {gep(ahead, imm(f)), b.getInt32(0), b.getInt32(3), b.getInt32(1)});
    }
    auto load_b = [&](int64_t v) -> llvm::Value* {
      if (b_masks.empty()) return b.CreateAlignedLoad(vt, b_vector(b_row, v), elem_align);
      return b.CreateMaskedLoad(vt, b_vector(b_row, v), elem_align, b_masks[v],
                                llvm::Constant::getNullValue(vt));
    };
    llvm::Value* a_off = b.CreateMul(k, a_k_stride);
    auto splat_a = [&](int64_t i) {
      return b.CreateVectorSplat(W, b.CreateAlignedLoad(f32, gep(a_rows[i], a_off), elem_align));
    };
    if (MR < V) {
      std::vector<llvm::Value*> splats(MR);
      for (int64_t i = 0; i < MR; ++i) splats[i] = splat_a(i);
      for (int64_t v = 0; v < V; ++v) {
        llvm::Value* bv = load_b(v);
        for (int64_t i = 0; i < MR; ++i) acc[i][v] = b.CreateCall(fma, {splats[i], bv, acc[i][v]});
      }
      return;
    }
    std::vector<llvm::Value*> bv(V);
    for (int64_t v = 0; v < V; ++v) bv[v] = load_b(v);
    if (after_b) a_off = b.CreateCall(after_b, {a_off, bv[V - 1]});
    for (int64_t i = 0; i < MR; ++i) {
      llvm::Value* splat = splat_a(i);
      for (int64_t v = 0; v < V; ++v) acc[i][v] = b.CreateCall(fma, {splat, bv[v], acc[i][v]});
    }
  };
  // A k-loop over [begin, end) in steps of `unroll`, carrying the accumulators. With few
  // accumulator registers (MR * NR/W below the FMAs in flight that hide FMA latency) one
  // chain per register would wait on each FMA's result; the loop then carries `copies`
  // independent copies of the tile (copy 0 starts from acc_in, the others from zero) and
  // adds them on exit. Each copy runs its own contiguous range of k (`split_len` k-steps:
  // copy c from begin + c * split_len): B is then read as `copies` streams at once, which
  // one core's memory system serves about twice as fast as one stream when B comes from
  // DRAM (a tile of one or two rows is the product of a short sequence).
  constexpr int64_t kFmasInFlight = 8;
  auto copies_for = [&](int64_t unroll) {
    return std::min(unroll, std::max<int64_t>(1, (kFmasInFlight + MR * V - 1) / (MR * V)));
  };
  // Streams of B: each k-loop iteration takes `step` k-steps from each of `streams`
  // equal contiguous ranges of k (split_len k-steps apart): the schedule's k_streams, and
  // at least one range per copy of a few-accumulator tile; range s adds into copy
  // s % copies.
  const int64_t copies = copies_for(mk.unroll_k);
  const int64_t streams = std::max(copies, std::min(mk.k_streams, mk.unroll_k));
  auto k_loop = [&](llvm::Value* begin, llvm::Value* end, int64_t unroll, Tile acc_in,
                    const char* name, llvm::Value* split_len = nullptr) {
    const int64_t n_copies = split_len ? copies : copies_for(unroll);
    const int64_t n_streams = split_len ? streams : 1;
    const int64_t step = unroll / n_streams;  // k per stream per iteration
    // Spread over the calls (ops.prefetch_next_rate): each iteration prefetches row r0 of
    // the next tile's B (all its vectors), and the rows after it up to one per k-step in
    // the k-loops of a call with few row tiles (spread_rows): r0 the iteration's first
    // step's place in the call's share (MicroKernelNode::prefetch_next_rate), carried from
    // iteration to iteration in rows scaled by 2^kPrefetchRateShift. All at the top of the
    // iteration: with each step's at the step (an address of their own, or the step's row
    // of B plus a distance), or a multiply per iteration, an 8 x 48 tile spilled its
    // accumulators.
    const bool spread = ops.prefetch_next_rate && b_masks.empty();
    llvm::PHINode* spread_at = nullptr;
    llvm::Value *spread_first = nullptr, *spread_step_size = nullptr;
    if (spread) {
      llvm::Value* per_k = b.CreateMul(ops.prefetch_next_rate, imm(n_streams));
      spread_step_size = b.CreateMul(per_k, imm(step));
      spread_first = b.CreateAdd(ops.prefetch_next_start, b.CreateMul(begin, per_k));
    }
    llvm::BasicBlock* pre = b.GetInsertBlock();
    llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx, std::string(name) + ".header", fn);
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx, std::string(name) + ".body", fn);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, std::string(name) + ".exit", fn);
    b.CreateBr(header);
    b.SetInsertPoint(header);
    llvm::PHINode* k = b.CreatePHI(i64, 2, "k");
    k->addIncoming(begin, pre);
    if (spread) {
      spread_at = b.CreatePHI(i64, 2, "spread.at");
      spread_at->addIncoming(spread_first, pre);
    }
    std::vector<Tile> phis(n_copies, Tile(MR, std::vector<llvm::Value*>(V)));
    for (int64_t c = 0; c < n_copies; ++c)
      for (int64_t i = 0; i < MR; ++i)
        for (int64_t v = 0; v < V; ++v) {
          llvm::PHINode* p = b.CreatePHI(vt, 2);
          p->addIncoming(c == 0 ? acc_in[i][v] : llvm::Constant::getNullValue(vt), pre);
          phis[c][i][v] = p;
        }
    b.CreateCondBr(b.CreateICmpSLT(k, end), body, exit);
    b.SetInsertPoint(body);
    std::vector<Tile> acc = phis;
    if (spread) {
      llvm::Value* r0 = b.CreateAShr(spread_at, imm(ir::MicroKernelNode::kPrefetchRateShift));
      llvm::Value* row =
          gep(b_base, b.CreateAdd(ops.prefetch_next_offset, b.CreateMul(r0, b_k_stride)));
      for (int64_t r = 0; r < (spread_rows ? unroll : 1); ++r)
        for (int64_t v = 0; v < V; ++v)
          b.CreateCall(prefetch, {b_vector(gep(row, b.CreateMul(imm(r), b_k_stride)), v),
                                  b.getInt32(0), b.getInt32(2), b.getInt32(1)});
    }
    // Steps u of one stream read B's panels 64 bytes apart: their row indices go through
    // `opaque` (streams lie a whole range apart and share them).
    std::vector<llvm::Value*> hidden(step, nullptr);
    if (opaque && step > 1)
      for (int64_t u = 0; u < step; ++u)
        hidden[u] = b.CreateCall(opaque, {b.CreateAdd(k, imm(u), "", false, true)});
    if (split_len) {
      for (int64_t s = 0; s < n_streams; ++s)
        for (int64_t u = 0; u < step; ++u) {
          llvm::Value* offset = b.CreateMul(split_len, imm(s));
          k_step(b.CreateAdd(b.CreateAdd(k, offset, "", false, true), imm(u), "", false, true),
                 acc[s % n_copies],
                 hidden[u] ? b.CreateAdd(hidden[u], offset, "", false, true) : nullptr);
        }
    } else {
      for (int64_t u = 0; u < unroll; ++u)
        k_step(b.CreateAdd(k, imm(u), "", false, true), acc[u % n_copies], hidden[u]);
    }
    llvm::BasicBlock* latch = b.GetInsertBlock();
    k->addIncoming(b.CreateAdd(k, imm(step), "", false, true), latch);
    if (spread) spread_at->addIncoming(b.CreateAdd(spread_at, spread_step_size), latch);
    for (int64_t c = 0; c < n_copies; ++c)
      for (int64_t i = 0; i < MR; ++i)
        for (int64_t v = 0; v < V; ++v)
          llvm::cast<llvm::PHINode>(phis[c][i][v])->addIncoming(acc[c][i][v], latch);
    b.CreateBr(header);
    b.SetInsertPoint(exit);
    Tile sum = phis[0];  // the header's values are live on exit
    for (int64_t c = 1; c < n_copies; ++c)
      for (int64_t i = 0; i < MR; ++i)
        for (int64_t v = 0; v < V; ++v) sum[i][v] = b.CreateFAdd(sum[i][v], phis[c][i][v]);
    return sum;
  };
  // The streams split k into equal ranges of split_len steps (a multiple of the steps each
  // stream takes per iteration); the rest, and every k of an unsplit loop past its last
  // whole unrolled step, in a loop of single steps.
  const int64_t per_stream = mk.unroll_k / streams;
  auto k_loops_over = [&](Tile acc, llvm::Value* extent) {
    llvm::Value* split_len =
        streams > 1 ? b.CreateMul(b.CreateSDiv(extent, imm(streams * per_stream)), imm(per_stream))
                    : nullptr;
    llvm::Value* k_main =
        streams > 1 ? b.CreateMul(split_len, imm(streams))
                    : b.CreateMul(b.CreateSDiv(extent, imm(mk.unroll_k)), imm(mk.unroll_k));
    // A loop whose bounds are constants that make it run no iteration is not emitted (a
    // block of constant length that unroll_k divides has no remainder).
    auto runs = [](llvm::Value* begin, llvm::Value* end) {
      auto* b0 = llvm::dyn_cast<llvm::ConstantInt>(begin);
      auto* e0 = llvm::dyn_cast<llvm::ConstantInt>(end);
      return !b0 || !e0 || b0->getSExtValue() < e0->getSExtValue();
    };
    llvm::Value* unrolled_end = streams > 1 ? split_len : k_main;
    if (mk.unroll_k > 1 && runs(imm(0), unrolled_end))
      acc = k_loop(imm(0), unrolled_end, mk.unroll_k, acc, "k.unrolled", split_len);
    llvm::Value* rest_begin = mk.unroll_k > 1 ? k_main : imm(0);
    if (!runs(rest_begin, extent)) return acc;
    return k_loop(rest_begin, extent, 1, acc, "k.rest");
  };
  // Streams over a whole k block (the schedule's kc, most blocks) get a loop of their own
  // whose ranges lie a constant distance apart: the distance folds into each load's
  // address instead of taking a register per stream and row (with A read in place, one
  // pointer per row, those registers run out and the tile's accumulators spill).
  auto k_loops_of_block = [&](Tile acc) {
    if (streams == 1 || mk.k_block <= 0) return k_loops_over(acc, k_extent);
    return either(
        b.CreateICmpEQ(k_extent, imm(mk.k_block)), "k.whole_block",
        [&] { return k_loops_over(acc, imm(mk.k_block)); },
        [&] { return k_loops_over(acc, k_extent); });
  };
  // A call with fewer row tiles than k-steps per iteration (prefetch_next_spread) runs
  // k-loops that prefetch a row of the next tile per k-step, the others k-loops that
  // prefetch one per iteration (more would repeat rows already fetched).
  auto k_loops = [&](Tile acc) {
    if (!ops.prefetch_next_rate || !ops.prefetch_next_spread || mk.unroll_k <= 1)
      return k_loops_of_block(acc);
    return either(
        ops.prefetch_next_spread, "prefetch.spread",
        [&] {
          spread_rows = true;
          Tile t = k_loops_of_block(acc);
          spread_rows = false;
          return t;
        },
        [&] { return k_loops_of_block(acc); });
  };
  Tile acc;
  if ((!mk.b_in_place && !b_paneled) || is_const(mk.n_valid, NR)) {
    acc = k_loops(init);
  } else {
    // Full column blocks load B unmasked; an edge block masks lanes at or past n_valid,
    // which may lie past the end of B or of its panels (they read as zero and are never
    // stored).
    acc = either(
        b.CreateICmpEQ(n_valid, imm(NR)), "b",  //
        [&] { return k_loops(init); },
        [&] {
          if (b_paneled)
            b_panel_offsets = edge_panel_offsets();
          else
            b_masks = tail_masks();
          Tile edge = k_loops(init);
          b_masks.clear();
          b_panel_offsets.clear();
          return edge;
        },
        edges_rare);
  }

  // Epilogue on the last k-block: every element of the tile through mk.epilogue, its
  // inputs read at the element's row and column (vectors along n load masked, lanes past
  // n_valid reading zero; they are never stored). A cheap epilogue (bias, a residual,
  // relu) runs here, on the accumulators before the store; one that calls a transcendental
  // function runs once per micro-kernel after every pass has stored its rows
  // (emit_epilogue_after_store).
  if (mk.epilogue.defined() && !epilogue_after_store(mk.epilogue)) {
    auto epilogue = [&] {
      std::vector<llvm::Value*> n_masks = tail_masks();
      EpilogueEmitter ep(fe, mk, row0);
      // Loads already emitted, by (input, row or -1 for same_row inputs, vector).
      std::map<std::tuple<size_t, int64_t, int64_t>, llvm::Value*> loaded;
      auto input_vector = [&](size_t x, int64_t i, int64_t v) {
        const EpilogueEmitter::Input& in = ep.inputs()[x];
        if (!in.operand->along_n) v = 0;
        if (in.same_row) i = -1;
        llvm::Value*& slot = loaded[{x, i, v}];
        if (!slot)
          slot = ep.load(x, i < 0 ? in.base : row_of(in.base, in.row_stride, i), v, n_masks[v]);
        return slot;
      };
      Tile out = acc;
      for (int64_t i = 0; i < MR; ++i)
        for (int64_t v = 0; v < V; ++v)
          out[i][v] = ep.apply(acc[i][v], [&](size_t x) { return input_vector(x, i, v); });
      return out;
    };
    acc = either(last, "epilogue", epilogue, [&] { return acc; });
  }

  // The stores: the vector that straddles n_valid stores lane by lane (store_lanes).
  llvm::Value* lane_slot = fe.entry_alloca(f32, W, 32);
  branch(
      n_full, "store",
      [&] {
        for (int64_t i = 0; i < MR; ++i)
          for (int64_t v = 0; v < V; ++v) b.CreateAlignedStore(acc[i][v], c_ptr(i, v), elem_align);
      },
      [&] {
        // Vectors wholly inside n_valid store as usual; the one that straddles it lane by
        // lane, and those past it not at all.
        for (int64_t v = 0; v < V; ++v) {
          llvm::Value* rem = b.CreateSub(n_valid, imm(v * W));
          branch(
              b.CreateICmpSGE(rem, imm(W)), "store.whole",
              [&] {
                for (int64_t i = 0; i < MR; ++i)
                  b.CreateAlignedStore(acc[i][v], c_ptr(i, v), elem_align);
              },
              [&] {
                branch(
                    b.CreateICmpSGT(rem, imm(0)), "store.part",
                    [&] {
                      for (int64_t i = 0; i < MR; ++i)
                        store_lanes(fe, lane_slot, acc[i][v], c_ptr(i, v), rem);
                    },
                    [] {});
              });
        }
      });
}

// A transcendental epilogue (epilogue_after_store) on the last k-block, after the tile's
// passes have stored its first `rows` rows: one loop over those rows that reads each
// vector of C back from L1, applies mk.epilogue and stores it. One copy of the
// expression per vector of a row for the whole micro-kernel.
void emit_epilogue_after_store(FunctionEmitter& fe, const MicroKernelNode& mk,
                               const MicroKernelOperands& ops, llvm::Value* rows) {
  llvm::IRBuilder<>& b = fe.builder();
  const unsigned W = static_cast<unsigned>(mk.vector_width);
  const int64_t V = mk.nr / W;
  llvm::Type* f32 = b.getFloatTy();
  llvm::VectorType* vt = llvm::FixedVectorType::get(f32, W);
  const llvm::Align elem_align(4);
  llvm::MDNode* edges_rare = llvm::MDBuilder(b.getContext()).createBranchWeights(1000, 1);
  llvm::Value* lane_slot = fe.entry_alloca(f32, W, 32);
  emit_if(
      b, ops.last, "epilogue", nullptr,
      [&] {
        EpilogueEmitter ep(fe, mk, b.getInt64(0));
        std::vector<llvm::Value*> n_masks = n_tail_masks(b, ops.n_valid, mk.nr, W);
        fe.emit_loop(
            b.getInt64(0), rows,
            [&](llvm::Value* i) {
              llvm::Value* c_row = b.CreateInBoundsGEP(f32, ops.c_base, b.CreateMul(i, ops.ldc));
              std::vector<llvm::Value*> input_rows;
              for (size_t x = 0; x < ep.inputs().size(); ++x) input_rows.push_back(ep.row(x, i));
              for (int64_t v = 0; v < V; ++v) {
                llvm::Value* rem = b.CreateSub(ops.n_valid, b.getInt64(v * W));
                emit_if(
                    b, b.CreateICmpSGT(rem, b.getInt64(0)), "epilogue.vector", edges_rare,
                    [&] {
                      llvm::Value* dst = b.CreateInBoundsGEP(f32, c_row, b.getInt64(v * W));
                      llvm::Value* product = b.CreateMaskedLoad(vt, dst, elem_align, n_masks[v],
                                                                llvm::Constant::getNullValue(vt));
                      llvm::Value* out = ep.apply(product, [&](size_t x) {
                        return ep.load(x, input_rows[x], v, n_masks[v]);
                      });
                      emit_if(
                          b, b.CreateICmpSGE(rem, b.getInt64(W)), "epilogue.whole", edges_rare,
                          [&] { b.CreateAlignedStore(out, dst, elem_align); },
                          [&] { store_lanes(fe, lane_slot, out, dst, rem); });
                    },
                    [] {});
              }
            },
            "epilogue.row");
      },
      [] {});
}

// The tile's passes over its m_valid rows. A whole tile (most tiles) runs at its full height. An
// edge tile of m_valid < MR rows runs as the passes schedule::edge_passes plans for it (3 rows of a
// 6 x 64 tile: one pass; 9 of a 14 x 32 tile: 8, then 1), each pass exactly its rows of C: the
// plan's last pass may be taller than the rows left, and runs as a tile of those rows. Until
// stop 56 it ran at its height, its extra rows repeating the last valid one (computed and stored
// twice): work for nothing, and 13 rows of a 14 x 32 tile as 14 spilled its accumulators (80
// GFLOP/s at M = 13 of the 2304 x 768 layer against 164 at M = 14; 157 as 13 rows). Each
// distinct pass (rows) is emitted once and taken by the edges whose plan holds it (`takes`: bit
// m_valid), below the rows of that plan's taller passes, which are whole.
void emit_passes(FunctionEmitter& fe, const MicroKernelNode& mk, const MicroKernelOperands& ops) {
  llvm::IRBuilder<>& b = fe.builder();
  const int64_t MR = mk.mr;
  DC_INTERNAL_CHECK(MR < 64, "micro-kernel: {} rows do not fit the edge plan's masks", MR);
  std::map<int64_t, uint64_t, std::greater<>> passes;  // rows -> edges; tallest first
  for (int64_t v = 1; v < MR; ++v)
    for (const schedule::EdgePass& p :
         schedule::edge_passes(MR, mk.nr / mk.vector_width, 4 * mk.vector_width, mk.k_block, v))
      passes[p.rows] |= uint64_t{1} << v;
  llvm::Value* m_valid = ops.m_valid;
  auto takes = [&](uint64_t edges) {
    return b.CreateICmpNE(b.CreateAnd(b.CreateLShr(b.getInt64(edges), m_valid), b.getInt64(1)),
                          b.getInt64(0));
  };
  emit_if(
      b, b.CreateICmpEQ(m_valid, b.getInt64(MR)), "m.whole",
      llvm::MDBuilder(b.getContext()).createBranchWeights(1000, 1),
      [&] { emit_tile(fe, mk, ops, MR, b.getInt64(0)); },
      [&] {
        // A plan's passes but the last are taller than its last (tallest first, whole),
        // so the rows below a pass are those of the taller passes that take its edge.
        for (auto [rows, edges] : passes) {
          emit_if(
              b, takes(edges), "m.edge", nullptr,
              [&] {
                llvm::Value* row0 = b.getInt64(0);
                for (auto [taller, taller_edges] : passes)
                  if (taller > rows)
                    row0 = b.CreateAdd(row0, b.CreateSelect(takes(taller_edges), b.getInt64(taller),
                                                            b.getInt64(0)));
                emit_tile(fe, mk, ops, rows, row0);
              },
              [] {});
        }
      });
}

}  // namespace

void emit_micro_kernel(FunctionEmitter& fe, const MicroKernelNode& mk) {
  if (mk.dot) return emit_dot_micro_kernel(fe, mk);
  const MicroKernelOperands ops = emit_micro_kernel_operands(fe, mk);
  llvm::IRBuilder<>& b = fe.builder();
  if (mk.mr == 1)
    emit_tile(fe, mk, ops, 1, b.getInt64(0));
  else
    emit_passes(fe, mk, ops);
  if (mk.epilogue.defined() && epilogue_after_store(mk.epilogue))
    emit_epilogue_after_store(fe, mk, ops, mk.mr == 1 ? b.getInt64(1) : ops.m_valid);
}

}  // namespace dietcode::codegen
