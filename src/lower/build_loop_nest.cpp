#include "lower/build_loop_nest.h"

#include <algorithm>
#include <utility>

#include "ir/affine.h"
#include "ir/visit.h"
#include "support/error.h"

namespace dietcode::lower {

using namespace ir;
using schedule::PackA;
using schedule::PackB;

namespace {

// One block loop: `block` counts blocks of `size`; `begin`/`len` name the block's range.
struct BlockLoop {
  Var block, begin, len;
  Expr extent;
  int64_t size;
};

BlockLoop make_block_loop(const std::string& axis, Expr extent, int64_t size) {
  return BlockLoop{Var(axis + "_block"), Var(axis + "0"), Var(axis + "_len"), std::move(extent),
                   size};
}

Stmt wrap_block_loop(const BlockLoop& l, Stmt body) {
  body = make_let(l.begin, Var(l.block) * l.size,
                  make_let(l.len, min(Expr(l.size), l.extent - Var(l.begin)), std::move(body)));
  return make_for(l.block, 0, ceil_div(l.extent, l.size), ForKind::Serial, std::move(body));
}

// The first column and k-row of the block that the block loops (in `order`, outermost
// first) visit after the current one: the innermost loop with a block left advances and the
// loops inside it start again; the current block's own after the last block.
std::pair<Expr, Expr> next_block(const schedule::LoopOrder& order, const BlockLoop& n,
                                 const BlockLoop& k, const BlockLoop& m) {
  auto loop = [&](schedule::Axis a) -> const BlockLoop& {
    return a == schedule::Axis::N ? n : a == schedule::Axis::K ? k : m;
  };
  Expr next_n = Var(n.begin), next_k = Var(k.begin);
  for (size_t level = 0; level < order.size(); ++level) {  // an inner loop's advance wins
    Expr n_at = Var(n.begin), k_at = Var(k.begin);
    for (size_t inner = level; inner < order.size(); ++inner) {
      const BlockLoop& l = loop(order[inner]);
      Expr begin = inner == level ? Var(l.begin) + Var(l.len) : Expr(0);
      if (order[inner] == schedule::Axis::N) n_at = begin;
      if (order[inner] == schedule::Axis::K) k_at = begin;
    }
    const BlockLoop& l = loop(order[level]);
    Expr advances = Var(l.begin) + Var(l.len) < l.extent;
    next_n = select(advances, n_at, next_n);
    next_k = select(advances, k_at, next_k);
  }
  return {next_n, next_k};
}

// Flattened index of a contraction operand with `replacements` applied to its axes.
Expr operand_offset(const ops::ContractionOperand& op, const VarMap& replacements) {
  return substitute(flatten_index(op.tensor, op.index), replacements);
}

// The rows and reduction indices a pack stage copies.
struct PackRange {
  Expr row_begin, row_extent, row_limit, k_begin, k_extent;
};

Stmt pack_stage(const ops::ContractionOperand& op, const Var& row_axis, const Var& k_axis,
                Buffer panel, Expr panel_offset, int64_t width, const PackRange& range) {
  PackStageNode p;
  p.panel = std::move(panel);
  p.panel_offset = std::move(panel_offset);
  p.width = width;
  p.source = op.tensor;
  p.row = Var("r");
  p.k = Var("kk");
  VarMap to_stage{{row_axis.get(), Expr(p.row)}, {k_axis.get(), Expr(p.k)}};
  for (const Expr& i : op.index) p.source_index.push_back(substitute(i, to_stage));
  auto form = affine_form(flatten_index(op.tensor, op.index), {k_axis});
  p.k_contiguous = form && is_const(form->coefficients[0], 1);
  p.row_begin = range.row_begin;
  p.row_extent = range.row_extent;
  p.row_limit = range.row_limit;
  p.k_begin = range.k_begin;
  p.k_extent = range.k_extent;
  return make_pack_stage(std::move(p));
}

}  // namespace

LoopNest build_loop_nest(const ops::Contraction& c, const schedule::MicroKernelSchedule& s) {
  LoopNest nest;
  BlockLoop n = make_block_loop("n", c.n_extent, s.nc);
  BlockLoop k = make_block_loop("k", c.k_extent, s.kc);
  BlockLoop m = make_block_loop("m", c.m_extent, s.mc);
  nest.n_block = n.block;
  nest.k_block = k.block;
  nest.m_block = m.block;
  Var n_tile("n_tile"), m_tile("m_tile");
  Expr row0 = Var(m.begin) + Var(m_tile) * s.mr;  // first output row of the tile
  Expr col0 = Var(n.begin) + Var(n_tile) * s.nr;  // first output column of the tile

  MicroKernelNode mk;
  mk.mr = s.mr;
  mk.nr = s.nr;
  mk.unroll_k = s.unroll_k;
  mk.k_streams = s.k_streams;
  mk.prefetch_b = s.prefetch_b;
  mk.k_block = s.kc;
  mk.vector_width = schedule::vector_isa(s.isa).width;
  // Blocks of K are all kc long when kc divides K (or one block holds all of K): say so,
  // and the micro-kernel's k-loops get constant trip counts (no remainder loop is emitted
  // where unroll_k divides them).
  const int64_t* k_const = as_const_int(c.k_extent);
  if (k_const && (s.kc >= *k_const || *k_const % s.kc == 0))
    mk.k_extent = Expr(std::min(s.kc, *k_const));
  else
    mk.k_extent = Var(k.len);
  mk.m_valid = min(Expr(s.mr), Var(m.len) - Var(m_tile) * s.mr);
  // Blocks of N are whole multiples of NR (nc is one), so when NR divides N every column
  // tile is whole: say so, and the micro-kernel has no edge case along n to emit.
  const int64_t* n_const = as_const_int(c.n_extent);
  if (n_const && *n_const % s.nr == 0)
    mk.n_valid = Expr(s.nr);
  else
    mk.n_valid = min(Expr(s.nr), Var(n.len) - Var(n_tile) * s.nr);
  mk.first_k_block = eq(Var(k.begin), 0);
  mk.last_k_block = eq(Var(k.begin) + Var(k.len), c.k_extent);

  // A: panels [tile][k][MR], or read in place through its affine strides.
  Buffer a_panel;
  if (s.pack_a == PackA::Packed) {
    a_panel = Buffer(c.a.tensor.name() + "_panel", {Expr(s.mc * s.kc)});
    mk.a = TileOperand{a_panel, Var(m_tile) * s.mr * Var(k.len), 1, s.mr};
  } else {
    auto form = affine_form(flatten_index(c.a.tensor, c.a.index), {c.m, c.k});
    DC_INTERNAL_CHECK(form, "direct A needs an affine access (the validator checks this)");
    Expr at_tile = operand_offset(c.a, {{c.m.get(), row0}, {c.k.get(), Expr(k.begin)}});
    mk.a = TileOperand{c.a.tensor, at_tile, form->coefficients[0], form->coefficients[1]};
  }
  // B: panels [tile][k][NR], per block or pre-packed once for all calls.
  Buffer b_panel;
  if (s.pack_b == PackB::PerBlock) {
    b_panel = Buffer(c.b.tensor.name() + "_panel", {Expr(s.nc * s.kc)});
    mk.b = TileOperand{b_panel, Var(n_tile) * s.nr * Var(k.len), 1, s.nr};
  } else if (s.vector_axis == schedule::Axis::K) {
    // Dot products: B's columns (one per n) read in place, contiguous along k (bind()
    // checked it); the operand's row stride steps between columns.
    auto form = affine_form(flatten_index(c.b.tensor, c.b.index), {c.n, c.k});
    DC_INTERNAL_CHECK(form && is_const(form->coefficients[1], 1),
                      "dot products need B contiguous along k (the validator checks this)");
    Expr at_tile = operand_offset(c.b, {{c.n.get(), col0}, {c.k.get(), Expr(k.begin)}});
    mk.b = TileOperand{c.b.tensor, at_tile, form->coefficients[0], 1};
    mk.b_in_place = true;
    mk.dot = true;
  } else if (s.pack_b == PackB::Direct) {
    // In place: B's rows (one per k) are contiguous along n (bind() checked it).
    auto form = affine_form(flatten_index(c.b.tensor, c.b.index), {c.n, c.k});
    DC_INTERNAL_CHECK(form && is_const(form->coefficients[0], 1),
                      "direct B needs rows contiguous along n (the validator checks this)");
    Expr at_tile = operand_offset(c.b, {{c.n.get(), col0}, {c.k.get(), Expr(k.begin)}});
    mk.b = TileOperand{c.b.tensor, at_tile, 1, form->coefficients[1]};
    mk.b_in_place = true;
  } else {
    // Pre-packed over all of k, zero-padded to whole panels (the blocking, kc, does not
    // change the layout). Vector panels, [N / W][K][W]: the layout does not depend on the
    // tile either, so every kernel of a module shares one packed copy of the weights; a row
    // of the tile is NR / W vectors, one per panel, K * W apart. Tile panels, [N / NR][K][NR]:
    // a tile's k-steps are one contiguous stream (nc is a multiple of NR, so a tile's first
    // column starts a panel).
    const bool tile = s.b_panel == schedule::BPanel::Tile;
    const int64_t w = tile ? s.nr : mk.vector_width;
    nest.packed_b_size = c.k_extent * (ceil_div(c.n_extent, w) * w);
    nest.packed_b = Buffer(c.b.tensor.name() + "_packed", {nest.packed_b_size});
    mk.b = TileOperand{nest.packed_b, col0 * c.k_extent + Var(k.begin) * w, 1, Expr(w)};
    if (!tile) mk.b_vector_stride = c.k_extent * w;
    // The B that the tile loops read next: the next column tile when m is the inner tile
    // loop (its calls reuse one tile's B), the next block of nc columns when n is (every
    // row tile walks the whole block). In both layouts the next block starts nc * K floats
    // past the block, the next tile NR * K past the tile.
    //  - m inner: the calls of a column tile in a k-block (its row tiles, calls =
    //    ceil(m.len / MR) of them) share out the next tile's rows of that k-block (the B the
    //    next calls read: the tile loops run inside the k-block), evenly and in order: call
    //    `m_tile` takes rows m_tile * k_len / calls on, one row (all its V = NR / W vectors)
    //    every `calls` k-steps (MicroKernelNode::prefetch_next_rate), so that the lines are
    //    asked for at about the rate the calls compute and the next tile is in L2 when its
    //    first call starts. Taking them all at the start of the tile (a vector of every
    //    k-row per call until the tile was covered) ran slower than no prefetch on the Intel
    //    VM (docs/bench/encoder-intel/stop57-next-tile-prefetch.txt). Where the calls are
    //    fewer than the k-steps of an unrolled iteration, each step takes a row
    //    (prefetch_next_spread). The block's last column tile prefetches for the calls after
    //    it, those of the block the block loops visit next: with k-blocks shorter than K,
    //    the first column tile of this block in the next k-block ([n, k, m] order), not
    //    the next block of columns (its B is read a whole k-loop later).
    //  - n inner: call number `part` (its row tile counted across the block's column
    //    tiles) prefetches vector `part` of each k-row of the next block, modulo its vectors.
    if (s.prefetch_next) {
      const int64_t W = mk.vector_width;
      if (s.inner_tile_loop == schedule::Axis::M) {
        const int64_t V = s.nr / W;
        Expr calls = ceil_div(Var(m.len), Expr(s.mr));
        // The next column tile of the block, or after the block's last one, the first
        // column tile of the block that the block loops visit next, in its k-block.
        auto [next_n, next_k] = next_block(s.loop_order, n, k, m);
        Expr last_tile = eq(Var(n_tile) + 1, ceil_div(Var(n.len), s.nr));
        Expr to_next_block = (next_n - col0) * c.k_extent + (next_k - Var(k.begin)) * w;
        mk.prefetch_next_offset = select(last_tile, to_next_block, Expr(s.nr) * c.k_extent);
        mk.prefetch_next_first = Expr(Var(m_tile)) * Var(k.len);
        mk.prefetch_next_rate = Expr(int64_t{1} << ir::MicroKernelNode::kPrefetchRateShift) / calls;
        mk.prefetch_next_lines = V;
        mk.prefetch_next_spread = calls < Expr(s.unroll_k);
      } else {
        Expr part = (Expr(Var(m_tile)) * (s.nc / s.nr) + Var(n_tile)) % Expr(s.nc / W);
        Expr start = Expr(s.nc) - Expr(Var(n_tile)) * s.nr;  // floats to the next block
        if (tile) {
          Expr panel = part / Expr(s.nr / W), vector = part % Expr(s.nr / W);
          mk.prefetch_next_offset = (start + panel * s.nr) * c.k_extent + vector * W;
        } else {
          mk.prefetch_next_offset = (start + part * W) * c.k_extent;
        }
      }
    }
    nest.prepack =
        pack_stage(c.b, c.n, c.k, nest.packed_b, 0, w, {0, c.n_extent, c.n_extent, 0, c.k_extent});
  }
  // C: the output is contiguous along n (the contraction matcher guarantees n is last).
  {
    std::vector<Expr> out_index(c.output_axes.begin(), c.output_axes.end());
    auto form = affine_form(flatten_index(c.output, out_index), {c.m, c.n});
    DC_INTERNAL_CHECK(form && is_const(form->coefficients[1], 1), "output not contiguous along n");
    mk.c = c.output;
    mk.c_offset =
        substitute(flatten_index(c.output, out_index), {{c.m.get(), row0}, {c.n.get(), col0}});
    mk.c_row_stride = form->coefficients[0];
  }
  // Epilogue inputs, addressed from the tile's first element (the matcher checked that
  // each is affine in m and n with stride 1 or 0 along n).
  mk.product = c.product;
  mk.epilogue = c.epilogue;
  for (const ops::Contraction::EpilogueInput& in : c.epilogue_inputs) {
    auto form = affine_form(flatten_index(in.operand.tensor, in.operand.index), {c.m, c.n});
    DC_INTERNAL_CHECK(form, "epilogue input {} not affine", in.operand.tensor.name());
    mk.epilogue_inputs.push_back(EpilogueOperand{
        in.operand.tensor, operand_offset(in.operand, {{c.m.get(), row0}, {c.n.get(), col0}}),
        form->coefficients[0], is_const(form->coefficients[1], 1), in.value});
  }

  Stmt body = make_micro_kernel(std::move(mk));
  // Batch loops around the micro-kernel (batch_inner), or outermost (below).
  auto wrap_batch_loops = [&](Stmt x) {
    for (size_t i = c.batch_axes.size(); i-- > 0;)
      x = make_for(c.batch_axes[i], 0, c.batch_extents[i], ForKind::Serial, x);
    return x;
  };
  if (s.batch_inner) body = wrap_batch_loops(body);
  // The innermost tile loop decides which micro-panel stays in L1 across it: the B
  // panel (kc x NR) when m is innermost, the A panel (MR x kc) when n is.
  if (s.inner_tile_loop == schedule::Axis::M) {
    body = make_for(m_tile, 0, ceil_div(Var(m.len), s.mr), ForKind::Serial, body);
    body = make_for(n_tile, 0, ceil_div(Var(n.len), s.nr), ForKind::Serial, body);
  } else {
    body = make_for(n_tile, 0, ceil_div(Var(n.len), s.nr), ForKind::Serial, body);
    body = make_for(m_tile, 0, ceil_div(Var(m.len), s.mr), ForKind::Serial, body);
  }

  // Block loops, innermost first, with each pack stage placed just inside the loop
  // that completes the block it copies.
  auto position = [&](schedule::Axis axis) {
    return std::find(s.loop_order.begin(), s.loop_order.end(), axis) - s.loop_order.begin();
  };
  auto level_of = [&](schedule::Axis x, schedule::Axis y) {
    return std::max(position(x), position(y));
  };
  for (int level = 2; level >= 0; --level) {
    std::vector<Stmt> stmts;
    if (s.pack_b == PackB::PerBlock && level_of(schedule::Axis::N, schedule::Axis::K) == level)
      stmts.push_back(pack_stage(c.b, c.n, c.k, b_panel, 0, s.nr,
                                 {Var(n.begin), Var(n.len), c.n_extent, Var(k.begin), Var(k.len)}));
    if (s.pack_a == PackA::Packed && level_of(schedule::Axis::M, schedule::Axis::K) == level)
      stmts.push_back(pack_stage(c.a, c.m, c.k, a_panel, 0, s.mr,
                                 {Var(m.begin), Var(m.len), c.m_extent, Var(k.begin), Var(k.len)}));
    stmts.push_back(body);
    const schedule::Axis axis = s.loop_order[level];
    const BlockLoop& loop = axis == schedule::Axis::N ? n : axis == schedule::Axis::K ? k : m;
    body = wrap_block_loop(loop, make_block(std::move(stmts)));
  }
  nest.body = s.batch_inner ? body : wrap_batch_loops(body);
  return nest;
}

}  // namespace dietcode::lower
