// Explicit vector code for one query tile of fused attention (ir::AttentionKernelNode):
// an online, max-subtracted softmax over key blocks (schedule/attention_schedule.h shows
// the loop structure). Below, the query rows in the lanes; with the head dimension in the
// lanes instead see emit_head_dim_lanes.
//
// Query rows sit in the vector lanes: lane r of vector v is row v * W + r of the tile, so
// the running maximum m, the running sum l and the rescaling factor alpha are plain
// vectors, updated without horizontal reductions. Everything a tile keeps lives in
// stack buffers that stay in L1:
//
//   qt     D x lanes       Q^T of the tile (lanes past T are zero), packed by the node's
//                          transposing pack stage (pack_emitter.cpp)
//   s      key_block x lanes   the block's scores, then its probabilities P
//   o      lanes x D'      the unnormalized output rows (D' = D rounded up to W), written
//                          first by the first key block
//   stat   3 x lanes       alpha, m and l per row (at the end 1 / l in place of alpha);
//                          kept in memory so that registers go to the inner loops
//
// Scores accumulate `unroll` keys x the row vectors in registers over D (a broadcast of
// K[j, d] times a row of qt), are scaled, stored and folded into the block's maximum as
// they are made; P V accumulates two output rows at a time (then the odd one), 8 vectors
// of D in registers, over the block's keys. Keys past T are never touched (blocks are cut
// at T), rows past the tile's valid rows are never stored, and the last vector of a row
// of V or O is masked when W does not divide D. A block whose keys are all masked with
// -inf leaves m at -inf; exponents are then taken against 0, not -inf, so no
// -inf - (-inf) NaN appears.
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <cmath>

#include "codegen/llvm/activation.h"
#include "codegen/llvm/codegen_llvm.h"
#include "lower/insert_packing.h"
#include "support/error.h"
#include "support/int_math.h"

namespace dietcode::codegen {

using namespace ir;

namespace {

using Carried = FunctionEmitter::Carried;

class AttentionEmitter {
 public:
  AttentionEmitter(FunctionEmitter& fe, const AttentionKernelNode& k)
      : fe_(fe),
        b_(fe.builder()),
        k_(k),
        w_(k.vector_width),
        row_vectors_((k.query_tile + w_ - 1) / w_),
        lanes_(row_vectors_ * w_),
        d_(k.head_dim),
        in_stride_(k.input_row_stride),
        d_vectors_((d_ + w_ - 1) / w_),
        f32_(b_.getFloatTy()),
        vt_(llvm::FixedVectorType::get(f32_, static_cast<unsigned>(w_))),
        fma_(llvm::Intrinsic::getDeclaration(&fe.module(), llvm::Intrinsic::fma, {vt_})) {}

  void emit() {
    if (k_.head_dim_lanes) return emit_head_dim_lanes();
    length_ = fe_.emit(k_.length);
    rows_ = fe_.emit(k_.rows);
    llvm::Value* tile = mul(fe_.emit(k_.row_begin), i64(k_.output_row_stride));
    o_ = fe_.element_ptr(k_.output, add(fe_.emit(k_.output_offset), tile));
    k_base_ = fe_.element_ptr(k_.k, fe_.emit(k_.k_offset));
    v_base_ = fe_.element_ptr(k_.v, fe_.emit(k_.v_offset));
    if (k_.mask.defined()) mask_ = fe_.element_ptr(k_.mask, fe_.emit(k_.mask_offset));
    qt_ = fe_.entry_alloca(f32_, uint64_t(d_ * lanes_), 64);
    s_ = fe_.entry_alloca(f32_, uint64_t(k_.key_block * lanes_), 64);
    o_tile_ = fe_.entry_alloca(f32_, uint64_t(lanes_ * d_vectors_ * w_), 64);
    stat_ = fe_.entry_alloca(f32_, uint64_t(3 * lanes_), 64);

    fe_.bind_buffer(k_.q_panel, qt_);
    DC_INTERNAL_CHECK(lower::packs_by_transposing(*k_.pack_q.as<PackStageNode>()),
                      "attention: Q's pack must be a transposing pack");
    fe_.emit(k_.pack_q);
    fe_.unbind_buffer(k_.q_panel);
    std::vector<llvm::Value*> m, l;
    for (int64_t v = 0; v < row_vectors_; ++v) {
      m.push_back(stat_at(i64(lanes_ + v * w_)));
      l.push_back(stat_at(i64(2 * lanes_ + v * w_)));
      store(fconst(-INFINITY), m.back());
      store(fconst(0.0), l.back());
    }
    llvm::Value* blocks = b_.CreateUDiv(add(length_, i64(k_.key_block - 1)), i64(k_.key_block));
    fe_.emit_loop(
        i64(0), blocks, [&](llvm::Value* block) { key_block(block, m, l); }, "key_block");
    for (int64_t v = 0; v < row_vectors_; ++v)
      store(b_.CreateFDiv(fconst(1.0), load(l[v])), stat_at(i64(v * w_)));
    fe_.emit_loop(
        i64(0), rows_,
        [&](llvm::Value* r) { store_output_row(r, splat(b_.CreateLoad(f32_, stat_at(r)))); },
        "attn_store");
  }

 private:
  // The head dimension in the lanes (schedule/attention_schedule.h, AttentionLanes::HeadDim):
  // an online softmax over key blocks, each block in two passes over the tile's rows, so
  // that the rows' independent work overlaps (one row's chain of dot product, maximum, exp
  // and P V is ~110 cycles of latency at T = 1):
  //   scores   per row: Q's row (D/W vectors, read in place) in registers, a score a dot
  //            product over D summed across the lanes (`unroll` keys at a time), stored to
  //            s[row]; the row's m', shift and alpha = exp(m - m') to stat
  //   values   per row: P[j] = exp(S[j] - m') key by key (a splat: its sum needs no
  //            reduction), l = alpha l + sum P, O_tile[row] = alpha O_tile + sum P[j] V[j]
  //            (D/W vectors in registers; the sums from zero, so their FMAs need not wait
  //            for alpha)
  // then O = O_tile / l. Stack: s (query_tile x key_block), O_tile (query_tile x D'), stat
  // (4 x query_tile: m, l, shift, alpha).
  void emit_head_dim_lanes() {
    length_ = fe_.emit(k_.length);
    rows_ = fe_.emit(k_.rows);
    llvm::Value* row0 = fe_.emit(k_.row_begin);
    llvm::Value* q_base =
        fe_.element_ptr(k_.q, add(fe_.emit(k_.q_offset), mul(row0, i64(in_stride_))));
    o_ = fe_.element_ptr(k_.output,
                         add(fe_.emit(k_.output_offset), mul(row0, i64(k_.output_row_stride))));
    k_base_ = fe_.element_ptr(k_.k, fe_.emit(k_.k_offset));
    v_base_ = fe_.element_ptr(k_.v, fe_.emit(k_.v_offset));
    if (k_.mask.defined()) mask_ = fe_.element_ptr(k_.mask, fe_.emit(k_.mask_offset));
    const int64_t tile = k_.query_tile;
    // Rows of s rounded up to W and a vector more: scores are stored as whole vectors from
    // their key on, P's vectors whole too (a masked store is microcoded on AMD, lanes past
    // the keys zero).
    s_row_stride_ = round_up(k_.key_block, w_) + w_;
    s_ = fe_.entry_alloca(f32_, uint64_t(tile * s_row_stride_), 64);
    o_tile_ = fe_.entry_alloca(f32_, uint64_t(tile * d_vectors_ * w_), 64);
    stat_ = fe_.entry_alloca(f32_, uint64_t(4 * tile), 64);
    auto stat = [&](int64_t which, llvm::Value* r) { return at(stat_, add(i64(which * tile), r)); };
    fe_.emit_loop(
        i64(0), rows_,
        [&](llvm::Value* r) {
          b_.CreateStore(llvm::ConstantFP::get(f32_, -INFINITY), stat(0, r));
          b_.CreateStore(llvm::ConstantFP::get(f32_, 0.0), stat(1, r));
        },
        "attn_init");
    llvm::Value* blocks = b_.CreateUDiv(add(length_, i64(k_.key_block - 1)), i64(k_.key_block));
    fe_.emit_loop(
        i64(0), blocks,
        [&](llvm::Value* block) {
          llvm::Value* j0 = mul(block, i64(k_.key_block));
          llvm::Value* rest = b_.CreateSub(length_, j0);
          llvm::Value* kv = b_.CreateSelect(b_.CreateICmpSLT(rest, i64(k_.key_block)), rest,
                                            i64(k_.key_block), "keys");
          llvm::Value* keys = at(k_base_, mul(j0, i64(in_stride_)));
          llvm::Value* values = at(v_base_, mul(j0, i64(in_stride_)));
          llvm::Value* mask = mask_ ? at(mask_, j0) : nullptr;
          fe_.emit_loop(
              i64(0), rows_,
              [&](llvm::Value* r) {
                llvm::Value* q_row = at(q_base, mul(r, i64(in_stride_)));
                llvm::Value* s_row = at(s_, mul(r, i64(s_row_stride_)));
                llvm::Value* block_max = row_scores(q_row, keys, mask, kv, s_row);
                llvm::Value* m = splat(b_.CreateLoad(f32_, stat(0, r)));
                llvm::Value* m_next = b_.CreateMaxNum(m, block_max);
                // Exponents against 0 while m' is still -inf (a block of masked keys).
                llvm::Value* shift = b_.CreateSelect(b_.CreateFCmpOEQ(m_next, fconst(-INFINITY)),
                                                     fconst(0.0), m_next);
                llvm::Value* alpha = emit_exp(b_, b_.CreateFSub(m, shift));
                b_.CreateStore(b_.CreateExtractElement(m_next, uint64_t(0)), stat(0, r));
                b_.CreateStore(b_.CreateExtractElement(shift, uint64_t(0)), stat(2, r));
                b_.CreateStore(b_.CreateExtractElement(alpha, uint64_t(0)), stat(3, r));
              },
              "attn_scores_rows");
          llvm::Value* first = b_.CreateICmpEQ(block, i64(0));
          fe_.emit_loop(
              i64(0), rows_,
              [&](llvm::Value* r) {
                llvm::Value* s_row = at(s_, mul(r, i64(s_row_stride_)));
                llvm::Value* shift = splat(b_.CreateLoad(f32_, stat(2, r)));
                // P = exp(S - m') in vectors of W keys (lanes past kv neither loaded nor
                // counted), stored over S, and their sum.
                llvm::Value* kv32 = b_.CreateTrunc(kv, b_.getInt32Ty());
                Carried p_sum = fe_.emit_loop(
                    i64(0), b_.CreateUDiv(add(kv, i64(w_ - 1)), i64(w_)), Carried{fconst(0.0)},
                    [&](llvm::Value* chunk, const Carried& partial) {
                      llvm::Value* j = mul(chunk, i64(w_));
                      llvm::Value* left = b_.CreateSub(kv32, b_.CreateTrunc(j, b_.getInt32Ty()));
                      llvm::Value* valid =
                          b_.CreateICmpSLT(lane_index(), b_.CreateVectorSplat(unsigned(w_), left));
                      llvm::Value* x = b_.CreateMaskedLoad(vt_, at(s_row, j), llvm::Align(4), valid,
                                                           fconst(0.0));
                      llvm::Value* p = b_.CreateSelect(valid, emit_exp(b_, b_.CreateFSub(x, shift)),
                                                       fconst(0.0));
                      b_.CreateAlignedStore(p, at(s_row, j), llvm::Align(4));
                      return Carried{b_.CreateFAdd(partial[0], p)};
                    },
                    "attn_exp_row");
                Carried sums = fe_.emit_loop(
                    i64(0), kv, Carried(size_t(1 + d_vectors_), fconst(0.0)),
                    [&](llvm::Value* j, const Carried& acc) {
                      llvm::Value* v_row = at(values, mul(j, i64(in_stride_)));
                      llvm::Value* p = splat(b_.CreateLoad(f32_, at(s_row, j)));
                      Carried out(acc.size());
                      out[0] = acc[0];
                      for (int64_t c = 0; c < d_vectors_; ++c)
                        out[1 + c] = fma(p, load_row(v_row, c), acc[1 + c]);
                      return out;
                    },
                    "attn_pv_row");
                sums[0] = lane_sum(p_sum[0]);
                llvm::Value* alpha = splat(b_.CreateLoad(f32_, stat(3, r)));
                llvm::Value* l = splat(b_.CreateLoad(f32_, stat(1, r)));
                b_.CreateStore(b_.CreateExtractElement(fma(l, alpha, sums[0]), uint64_t(0)),
                               stat(1, r));
                for (int64_t c = 0; c < d_vectors_; ++c) {
                  // The first block's tile is uninitialized: never read.
                  llvm::Value* o = b_.CreateSelect(first, sums[1 + c],
                                                   fma(load(o_tile_at(r, c)), alpha, sums[1 + c]));
                  store(o, o_tile_at(r, c));
                }
              },
              "attn_values_rows");
        },
        "attn_block");
    fe_.emit_loop(
        i64(0), rows_,
        [&](llvm::Value* r) {
          store_output_row(r, b_.CreateFDiv(fconst(1.0), splat(b_.CreateLoad(f32_, stat(1, r)))));
        },
        "attn_store");
  }

  // Scores s_row[j] = scale q . K[j] (+ mask[j]) for j < kv, `unroll` keys at a time (q:
  // the row of Q at q_row, D/W vectors); returns their maximum (in every lane).
  llvm::Value* row_scores(llvm::Value* q_row, llvm::Value* keys, llvm::Value* mask, llvm::Value* kv,
                          llvm::Value* s_row) {
    std::vector<llvm::Value*> q(d_vectors_);
    for (int64_t c = 0; c < d_vectors_; ++c) q[c] = load_row(q_row, c);
    auto scores = [&](llvm::Value* j, int64_t n, const Carried& mx) {
      Carried next = mx;
      for (int64_t i = 0; i < n; ++i) {
        llvm::Value* key = add(j, i64(i));
        llvm::Value* k_row = at(keys, mul(key, i64(in_stride_)));
        // Two chains of FMAs over D's vectors, then summed across the lanes.
        llvm::Value* acc[2] = {fconst(0.0), fconst(0.0)};
        for (int64_t c = 0; c < d_vectors_; ++c)
          acc[c % 2] = fma(q[c], load_row(k_row, c), acc[c % 2]);
        llvm::Value* x = b_.CreateFMul(lane_sum(b_.CreateFAdd(acc[0], acc[1])), fconst(k_.scale));
        if (mask) x = b_.CreateFAdd(x, splat(b_.CreateLoad(f32_, at(mask, key))));
        // A whole vector (every lane the score) from s[key] on, the next key's overwriting
        // all but its first lane: P's first load then comes from one store, which store
        // forwarding serves (one key, T = 1), where a scalar store would make it wait.
        b_.CreateAlignedStore(x, at(s_row, key), llvm::Align(4));
        next[0] = b_.CreateMaxNum(next[0], x);
      }
      return next;
    };
    const int64_t u = k_.unroll;
    llvm::Value* groups = b_.CreateUDiv(kv, i64(u));
    Carried block_max = fe_.emit_loop(
        i64(0), groups, Carried{fconst(-INFINITY)},
        [&](llvm::Value* g, const Carried& mx) { return scores(mul(g, i64(u)), u, mx); },
        "attn_dots");
    if (u > 1)
      block_max = fe_.emit_loop(
          mul(groups, i64(u)), kv, block_max,
          [&](llvm::Value* j, const Carried& mx) { return scores(j, 1, mx); }, "attn_dots_rest");
    return block_max[0];
  }

  // <0, 1, ..., W - 1> as 32-bit lanes.
  llvm::Value* lane_index() {
    std::vector<llvm::Constant*> lanes;
    for (int64_t i = 0; i < w_; ++i) lanes.push_back(b_.getInt32(uint32_t(i)));
    return llvm::ConstantVector::get(lanes);
  }

  // The sum of x's lanes in every lane: log2(W) steps of adding x to its lanes swapped in
  // halves, then quarters, ...
  llvm::Value* lane_sum(llvm::Value* x) {
    for (int64_t half = w_ / 2; half >= 1; half /= 2) {
      std::vector<int> swap;
      for (int64_t i = 0; i < w_; ++i) swap.push_back(int((i ^ half)));
      x = b_.CreateFAdd(x, b_.CreateShuffleVector(x, swap));
    }
    return x;
  }

  // One online-softmax step over keys [block * key_block, + kv), kv = min(key_block, T - j0).
  void key_block(llvm::Value* block, const std::vector<llvm::Value*>& m,
                 const std::vector<llvm::Value*>& l) {
    llvm::Value* j0 = mul(block, i64(k_.key_block));
    llvm::Value* rest = b_.CreateSub(length_, j0);
    llvm::Value* kv =
        b_.CreateSelect(b_.CreateICmpSLT(rest, i64(k_.key_block)), rest, i64(k_.key_block), "keys");
    llvm::Value* keys = at(k_base_, mul(j0, i64(in_stride_)));
    llvm::Value* values = at(v_base_, mul(j0, i64(in_stride_)));
    llvm::Value* mask = mask_ ? at(mask_, j0) : nullptr;

    // The scores and their maximum per row.
    const int64_t u = k_.unroll;
    llvm::Value* groups = b_.CreateUDiv(kv, i64(u));
    Carried block_max = fe_.emit_loop(
        i64(0), groups, constants(-INFINITY),
        [&](llvm::Value* g, const Carried& mx) {
          return scores(keys, mask, mul(g, i64(u)), u, mx);
        },
        "attn_scores");
    if (u > 1)
      block_max = fe_.emit_loop(
          mul(groups, i64(u)), kv, block_max,
          [&](llvm::Value* j, const Carried& mx) { return scores(keys, mask, j, 1, mx); },
          "attn_scores_rest");

    // m' = max(m, block max); alpha = exp(m - m'), against 0 while m' is still -inf.
    std::vector<llvm::Value*> shift(row_vectors_), alpha(row_vectors_);
    for (int64_t v = 0; v < row_vectors_; ++v) {
      llvm::Value* old = load(m[v]);
      llvm::Value* next = b_.CreateMaxNum(old, block_max[v]);
      shift[v] = b_.CreateSelect(b_.CreateFCmpOEQ(next, fconst(-INFINITY)), fconst(0.0), next);
      alpha[v] = emit_exp(b_, b_.CreateFSub(old, shift[v]));
      store(alpha[v], stat_at(i64(v * w_)));
      store(next, m[v]);
    }
    // P = exp(S - m'), and its row sums.
    Carried sum = fe_.emit_loop(
        i64(0), kv, constants(0.0),
        [&](llvm::Value* j, const Carried& partial) {
          Carried next;
          for (int64_t v = 0; v < row_vectors_; ++v) {
            llvm::Value* p = emit_exp(b_, b_.CreateFSub(load(s_at(j, v)), shift[v]));
            store(p, s_at(j, v));
            next.push_back(b_.CreateFAdd(partial[v], p));
          }
          return next;
        },
        "attn_exp");
    for (int64_t v = 0; v < row_vectors_; ++v) store(fma(load(l[v]), alpha[v], sum[v]), l[v]);

    // O[r] = alpha[r] O[r] + sum_j P[j][r] V[j] (O starts from 0 in the first block, which
    // never reads the uninitialized tile): rows in pairs (each load of V feeds two rows),
    // then the odd one.
    llvm::Value* first = b_.CreateICmpEQ(block, i64(0));
    llvm::Value* pairs = b_.CreateUDiv(rows_, i64(2));
    fe_.emit_loop(
        i64(0), pairs, [&](llvm::Value* i) { accumulate_pv(values, kv, mul(i, i64(2)), 2, first); },
        "attn_row_pairs");
    fe_.emit_loop(
        mul(pairs, i64(2)), rows_, [&](llvm::Value* r) { accumulate_pv(values, kv, r, 1, first); },
        "attn_row_last");
  }

  // Rows [r, r + n) of O (n = 1 or 2): kOutputVectors / n vectors of D per row at a time
  // in registers, over the block's kv keys.
  void accumulate_pv(llvm::Value* values, llvm::Value* kv, llvm::Value* r, int64_t n,
                     llvm::Value* first) {
    const int64_t chunk = kOutputVectors / n;
    std::vector<llvm::Value*> row(n), alpha(n);
    for (int64_t k = 0; k < n; ++k) {
      row[k] = add(r, i64(k));
      alpha[k] = splat(b_.CreateLoad(f32_, stat_at(row[k])));
    }
    for (int64_t c0 = 0; c0 < d_vectors_; c0 += chunk) {
      int64_t m = std::min(chunk, d_vectors_ - c0);
      Carried init;  // init[k * m + c]: row k, vector c0 + c
      for (int64_t k = 0; k < n; ++k)
        for (int64_t c = 0; c < m; ++c)
          init.push_back(b_.CreateSelect(first, fconst(0.0),
                                         b_.CreateFMul(load(o_tile_at(row[k], c0 + c)), alpha[k])));
      Carried acc = fe_.emit_loop(
          i64(0), kv, init,
          [&](llvm::Value* j, const Carried& o) {
            llvm::Value* v_row = at(values, mul(j, i64(in_stride_)));
            std::vector<llvm::Value*> v(m);
            for (int64_t c = 0; c < m; ++c) v[c] = load_row(v_row, c0 + c);
            Carried next;
            for (int64_t k = 0; k < n; ++k) {
              llvm::Value* p = splat(b_.CreateLoad(f32_, at(s_, add(mul(j, i64(lanes_)), row[k]))));
              for (int64_t c = 0; c < m; ++c) next.push_back(fma(p, v[c], o[k * m + c]));
            }
            return next;
          },
          "attn_pv");
      for (int64_t k = 0; k < n; ++k)
        for (int64_t c = 0; c < m; ++c) store(acc[k * m + c], o_tile_at(row[k], c0 + c));
    }
  }

  // s[jl + i] = scale * qt^T K[jl + i] (+ mask[jl + i]) for i < n, accumulated over D in
  // registers. Few keys and row vectors would make one chain of dependent FMAs (the
  // remainder keys, T = 1): D is then split into `split` interleaved partial sums.
  // Returns `running_max` updated with these scores.
  Carried scores(llvm::Value* keys, llvm::Value* mask, llvm::Value* jl, int64_t n,
                 const Carried& running_max) {
    const int64_t chains = n * row_vectors_;
    const int64_t split = std::clamp<int64_t>(kMinChains / chains, 1, 4);
    std::vector<llvm::Value*> key_rows;
    for (int64_t i = 0; i < n; ++i)
      key_rows.push_back(at(keys, mul(add(jl, i64(i)), i64(in_stride_))));
    // sums[(p * n + i) * row_vectors + v]: partial sum p, key jl + i, row vector v.
    auto step = [&](llvm::Value* d, const Carried& sums, int64_t p) {
      Carried next = sums;
      std::vector<llvm::Value*> q(row_vectors_);
      for (int64_t v = 0; v < row_vectors_; ++v)
        q[v] = load(at(qt_, add(mul(d, i64(lanes_)), i64(v * w_))));
      for (int64_t i = 0; i < n; ++i) {
        llvm::Value* x = splat(b_.CreateLoad(f32_, at(key_rows[i], d)));
        for (int64_t v = 0; v < row_vectors_; ++v) {
          size_t at_sum = size_t((p * n + i) * row_vectors_ + v);
          next[at_sum] = fma(x, q[v], sums[at_sum]);
        }
      }
      return next;
    };
    Carried acc = fe_.emit_loop(
        i64(0), i64(d_ / split), Carried(size_t(split * chains), fconst(0.0)),
        [&](llvm::Value* d, const Carried& sums) {
          Carried next = sums;
          for (int64_t p = 0; p < split; ++p) next = step(add(mul(d, i64(split)), i64(p)), next, p);
          return next;
        },
        "attn_dot");
    if (d_ % split != 0)
      acc = fe_.emit_loop(
          i64(d_ / split * split), i64(d_), acc,
          [&](llvm::Value* d, const Carried& sums) { return step(d, sums, 0); }, "attn_dot_rest");
    Carried max = running_max;
    for (int64_t i = 0; i < n; ++i) {
      llvm::Value* key = add(jl, i64(i));
      llvm::Value* bias = mask ? splat(b_.CreateLoad(f32_, at(mask, key))) : nullptr;
      for (int64_t v = 0; v < row_vectors_; ++v) {
        llvm::Value* s = acc[size_t(i * row_vectors_ + v)];
        for (int64_t p = 1; p < split; ++p)
          s = b_.CreateFAdd(s, acc[size_t((p * n + i) * row_vectors_ + v)]);
        s = b_.CreateFMul(s, fconst(k_.scale));
        if (bias) s = b_.CreateFAdd(s, bias);
        store(s, s_at(key, v));
        max[v] = b_.CreateMaxNum(max[v], s);
      }
    }
    return max;
  }

  // O's row r of the tile: O_tile[r] * inv_l (the last vector masked when W does not
  // divide D).
  void store_output_row(llvm::Value* r, llvm::Value* inv_l) {
    llvm::Value* o_row = at(o_, mul(r, i64(k_.output_row_stride)));
    for (int64_t c = 0; c < d_vectors_; ++c) {
      llvm::Value* x = b_.CreateFMul(load(o_tile_at(r, c)), inv_l);
      llvm::Value* ptr = at(o_row, i64(c * w_));
      if (llvm::Value* mask = column_mask(c))
        b_.CreateMaskedStore(x, ptr, llvm::Align(4), mask);
      else
        b_.CreateAlignedStore(x, ptr, llvm::Align(4));
    }
  }

  // Lanes of output vector c that lie inside D, or null when all do.
  llvm::Value* column_mask(int64_t c) {
    int64_t valid = d_ - c * w_;
    if (valid >= w_) return nullptr;
    std::vector<llvm::Constant*> lanes;
    for (int64_t i = 0; i < w_; ++i) lanes.push_back(b_.getInt1(i < valid));
    return llvm::ConstantVector::get(lanes);
  }
  llvm::Value* load_row(llvm::Value* row, int64_t c) {
    llvm::Value* ptr = at(row, i64(c * w_));
    if (llvm::Value* mask = column_mask(c))
      return b_.CreateMaskedLoad(vt_, ptr, llvm::Align(4), mask, llvm::Constant::getNullValue(vt_));
    return b_.CreateAlignedLoad(vt_, ptr, llvm::Align(4));
  }

  // One constant vector per row vector: the start of a loop-carried reduction.
  Carried constants(double value) { return Carried(size_t(row_vectors_), fconst(value)); }
  llvm::Value* s_at(llvm::Value* j, int64_t v) {
    return at(s_, add(mul(j, i64(lanes_)), i64(v * w_)));
  }
  llvm::Value* stat_at(llvm::Value* lane) { return at(stat_, lane); }
  llvm::Value* o_tile_at(llvm::Value* r, int64_t c) {
    return at(o_tile_, add(mul(r, i64(d_vectors_ * w_)), i64(c * w_)));
  }

  llvm::Value* i64(int64_t v) { return b_.getInt64(v); }
  llvm::Value* add(llvm::Value* a, llvm::Value* b) { return b_.CreateAdd(a, b, "", true, true); }
  llvm::Value* mul(llvm::Value* a, llvm::Value* b) { return b_.CreateMul(a, b, "", true, true); }
  llvm::Value* at(llvm::Value* base, llvm::Value* index) {
    return b_.CreateInBoundsGEP(f32_, base, index);
  }
  llvm::Value* load(llvm::Value* ptr) { return b_.CreateAlignedLoad(vt_, ptr, llvm::Align(4)); }
  void store(llvm::Value* v, llvm::Value* ptr) { b_.CreateAlignedStore(v, ptr, llvm::Align(4)); }
  llvm::Value* splat(llvm::Value* x) { return b_.CreateVectorSplat(unsigned(w_), x); }
  llvm::Value* fconst(double v) { return llvm::ConstantFP::get(vt_, v); }
  llvm::Value* fma(llvm::Value* a, llvm::Value* b, llvm::Value* c) {
    return b_.CreateCall(fma_, {a, b, c});
  }

  static constexpr int64_t kOutputVectors = 8;  // accumulators of P V (of one or two rows)
  static constexpr int64_t kMinChains = 8;      // independent FMA chains that hide latency

  FunctionEmitter& fe_;
  llvm::IRBuilder<>& b_;
  const AttentionKernelNode& k_;
  const int64_t w_, row_vectors_, lanes_, d_, in_stride_, d_vectors_;
  int64_t s_row_stride_ = 0;  // head-dim lanes: floats per row of s
  llvm::Type* f32_;
  llvm::FixedVectorType* vt_;
  llvm::Function* fma_;
  llvm::Value *length_ = nullptr, *rows_ = nullptr;
  llvm::Value *o_ = nullptr, *k_base_ = nullptr, *v_base_ = nullptr, *mask_ = nullptr;
  llvm::Value *qt_ = nullptr, *s_ = nullptr, *o_tile_ = nullptr, *stat_ = nullptr;
};

}  // namespace

void emit_attention_kernel(FunctionEmitter& fe, const AttentionKernelNode& k) {
  AttentionEmitter(fe, k).emit();
}

}  // namespace dietcode::codegen
