// Generated code against the float64 reference: >= 30 random micro-kernels per
// operator, M over 1, primes, sizes just off tile multiples and sizes outside the
// declared range [1, 128]; fresh random inputs, outputs poisoned with NaN.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "codegen/llvm/jit.h"
#include "codegen/llvm/target.h"
#include "conv1d_op.h"
#include "lower/pipeline.h"
#include "ops/batch_matmul.h"
#include "ops/dense.h"
#include "reference/check.h"
#include "runtime/thread_pool.h"
#include "schedule/random_schedule.h"
#include "support/int_math.h"

using namespace dietcode;

namespace {

const std::vector<int64_t> kSizes{1,  2,  3,  5,  7,   8,   15,  16,   17,
                                  31, 63, 64, 65, 127, 128, 129, 1000, 2048};
constexpr int kSchedulesPerOperator = 30;
constexpr double kTolerance = 1e-5;

struct OperatorCase {
  std::string name;
  std::function<te::Operator()> make;
};

void PrintTo(const OperatorCase& c, std::ostream* os) {
  *os << c.name;
}

// A contraction with an epilogue written directly in the TE, beyond the dense chains:
// a per-row scale s[b, m], a residual R[b, m, n] and a select, over a batched product
// (the epilogue inputs' offsets then carry the batch axis too).
te::Operator batched_epilogue_case() {
  te::ShapeVar m = te::shape_var("M", 1, 128);
  ir::Expr mv = m.var;
  const int64_t batch = 3, n = 21, k = 18;
  te::Input a = te::input("A", {ir::Expr(batch), mv, ir::Expr(k)});
  te::Input b = te::input("B", {ir::Expr(batch), ir::Expr(n), ir::Expr(k)});
  te::Input s = te::input("s", {ir::Expr(batch), mv});
  te::Input r = te::input("R", {ir::Expr(batch), mv, ir::Expr(n)});
  te::ComputeOp y = te::compute(
      "Y", {ir::Expr(batch), mv, ir::Expr(n)}, {"b", "m", "n"},
      [&](const std::vector<ir::Var>& ax) {
        ir::Var kk("k");
        ir::Expr p = ir::reduce_sum(
            kk, k, ir::load(a.tensor, {ax[0], ax[1], kk}) * ir::load(b.tensor, {ax[0], ax[2], kk}));
        ir::Expr scaled = p * ir::load(s.tensor, {ax[0], ax[1]});
        ir::Expr res = ir::load(r.tensor, {ax[0], ax[1], ax[2]});
        return ir::select(scaled < res, ir::call(ir::CallOp::Tanh, {scaled - res}),
                          ir::max(scaled, res) * ir::make_float(0.5));
      });
  return te::Operator{"batched_epilogue", {m}, {a, b, s, r}, y, {}};
}

te::Operator batch_matmul_case(ops::Layout layout) {
  te::ShapeVar m = te::shape_var("M", 1, 128);
  return ops::batch_matmul({m}, 3, m.var, 24, 19, layout);
}

std::vector<OperatorCase> operator_cases() {
  return {
      {"dense", [] { return ops::dense(1, 128, 45, 37); }},
      {"dense_bias", [] { return ops::dense(1, 128, 70, 29, ops::Epilogue::Bias); }},
      {"dense_bias_relu", [] { return ops::dense(1, 128, 33, 40, ops::Epilogue::BiasRelu); }},
      {"dense_bias_gelu", [] { return ops::dense(1, 128, 100, 23, ops::Epilogue::BiasGelu); }},
      {"dense_bias_residual",
       [] { return ops::dense(1, 128, 70, 29, ops::parse_epilogue("bias+residual")); }},
      {"dense_scale_bias_gelu_tanh",
       [] { return ops::dense(1, 128, 41, 33, ops::parse_epilogue("scale+bias+gelu_tanh")); }},
      {"dense_residual_tanh",
       [] { return ops::dense(1, 128, 24, 50, ops::parse_epilogue("residual+tanh")); }},
      {"batched_epilogue", batched_epilogue_case},
      {"batch_matmul_NN", [] { return batch_matmul_case(ops::Layout::NN); }},
      {"batch_matmul_NT", [] { return batch_matmul_case(ops::Layout::NT); }},
      {"conv1d_implicit_gemm", [] { return dietcode::testing::conv1d(1, 128, 3, 3, 20); }},
  };
}

std::vector<schedule::Isa> isas() {
  std::vector<schedule::Isa> v{schedule::Isa::Avx2};
  if (codegen::host_supports(schedule::Isa::Avx512)) v.push_back(schedule::Isa::Avx512);
  return v;
}

class GeneratedCode : public ::testing::TestWithParam<std::tuple<OperatorCase, schedule::Isa>> {};

TEST_P(GeneratedCode, MatchesReferenceForEveryShape) {
  const auto& [op_case, isa] = GetParam();
  te::Operator op = op_case.make();
  std::mt19937_64 rng(std::hash<std::string>{}(op_case.name + std::string(to_string(isa))));
  std::vector<reference::CheckCase> cases;
  for (int64_t m : kSizes) cases.push_back(reference::make_check_case(op, {m}, rng));
  for (int i = 0; i < kSchedulesPerOperator; ++i) {
    schedule::MicroKernelSchedule s = schedule::random_schedule(rng, isa, op);
    runtime::Kernel kernel = runtime::Kernel::compile(op, s);
    for (const reference::CheckCase& c : cases) {
      double err = reference::run_check_case(kernel, c);
      ASSERT_LE(err, kTolerance) << op_case.name << " M=" << c.shape[0]
                                 << " schedule=" << schedule::to_json_text(s);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllOperators, GeneratedCode,
                         ::testing::Combine(::testing::ValuesIn(operator_cases()),
                                            ::testing::ValuesIn(isas())),
                         [](const auto& info) {
                           return std::get<0>(info.param).name + "_" +
                                  std::string(to_string(std::get<1>(info.param)));
                         });

// k_streams walks 2 or 4 ranges of each k block at once (one tile, or the copies of a
// few-accumulator one): k blocks shorter than, equal to and just off multiples of the
// streams x unroll, and tiles with 1, 2 and more accumulator copies.
TEST(GeneratedCode, KStreamsMatchReferenceForEveryKBlock) {
  const schedule::Isa isa = codegen::host_target().isa;
  const int64_t w = schedule::vector_isa(isa).width;
  std::mt19937_64 rng(7);
  int checked = 0;
  for (int64_t k : {1, 3, 8, 17, 63, 200}) {
    te::Operator op = ops::dense(1, 128, 3 * w + 5, k, ops::Epilogue::Bias);
    std::vector<reference::CheckCase> cases;
    for (int64_t m : {1, 2, 7, 64, 129}) cases.push_back(reference::make_check_case(op, {m}, rng));
    for (auto [mr, vectors] : {std::pair<int64_t, int64_t>{1, 1}, {2, 1}, {4, 2}, {1, 3}})
      for (int64_t streams : {2, 4})
        for (int64_t unroll : {4, 8})
          for (int64_t kc : {int64_t{5}, int64_t{64}}) {
            schedule::MicroKernelSchedule s;
            s.isa = isa;
            s.mr = mr;
            s.nr = vectors * w;
            s.kc = std::min(kc, k);
            s.mc = mr * 4;
            s.nc = s.nr * 2;
            s.unroll_k = unroll;
            s.k_streams = streams;
            s.pack_b =
                (streams + unroll) % 3 ? schedule::PackB::Prepacked : schedule::PackB::PerBlock;
            s.pack_a = kc == 5 ? schedule::PackA::Packed : schedule::PackA::Direct;
            runtime::Kernel kernel = runtime::Kernel::compile(op, s);
            for (const reference::CheckCase& c : cases) {
              double err = reference::run_check_case(kernel, c);
              ASSERT_LE(err, kTolerance)
                  << "K=" << k << " M=" << c.shape[0] << " schedule=" << schedule::to_json_text(s);
              ++checked;
            }
          }
  }
  EXPECT_EQ(checked, 6 * 5 * 4 * 2 * 2 * 2);
}

// prefetch_b adds prefetches only: the results match for every distance, B prepacked,
// packed per block and read in place, k blocks shorter and longer than the distance.
TEST(GeneratedCode, PrefetchedBMatchesReference) {
  const schedule::Isa isa = codegen::host_target().isa;
  const int64_t w = schedule::vector_isa(isa).width;
  std::mt19937_64 rng(11);
  int checked = 0;
  for (int64_t k : {1, 17, 100}) {
    te::Operator op = ops::dense(1, 128, 2 * w + 3, k, ops::Epilogue::Bias);
    std::vector<reference::CheckCase> cases;
    for (int64_t m : {1, 5, 64, 131}) cases.push_back(reference::make_check_case(op, {m}, rng));
    for (int64_t ahead : {16, 32, 64})
      for (schedule::PackB pack : {schedule::PackB::Prepacked, schedule::PackB::PerBlock}) {
        schedule::MicroKernelSchedule s;
        s.isa = isa;
        s.mr = 4;
        s.nr = 2 * w;
        s.kc = std::min<int64_t>(k, 48);
        s.mc = 8;
        s.nc = s.nr * 2;
        s.unroll_k = 4;
        s.pack_b = pack;
        s.prefetch_b = ahead;
        runtime::Kernel kernel = runtime::Kernel::compile(op, s);
        for (const reference::CheckCase& c : cases) {
          ASSERT_LE(reference::run_check_case(kernel, c), kTolerance)
              << "K=" << k << " M=" << c.shape[0] << " schedule=" << schedule::to_json_text(s);
          ++checked;
        }
      }
  }
  EXPECT_EQ(checked, 3 * 4 * 3 * 2);
}

// prefetch_next adds prefetches only (of the next tile's B with m the inner tile loop, of
// the next block's with n inner; past B's end at the last ones): the results match for
// both panel layouts, N just off a multiple of the tile and of the block, k blocks shorter
// than K and all of it, M from one row to rows of many tiles.
TEST(GeneratedCode, PrefetchedNextTileMatchesReference) {
  const schedule::Isa isa = codegen::host_target().isa;
  const int64_t w = schedule::vector_isa(isa).width;
  std::mt19937_64 rng(17);
  int checked = 0;
  const int64_t n = 7 * w + 3, k = 41;
  te::Operator op = ops::dense(1, 200, n, k, ops::Epilogue::Bias);
  std::vector<reference::CheckCase> cases;
  for (int64_t m : {1, 2, 5, 13, 64, 131, 200})
    cases.push_back(reference::make_check_case(op, {m}, rng));
  for (schedule::Axis inner : {schedule::Axis::M, schedule::Axis::N})
    for (schedule::BPanel panel : {schedule::BPanel::Vector, schedule::BPanel::Tile})
      for (int64_t kc : {int64_t{16}, k}) {
        schedule::MicroKernelSchedule s;
        s.isa = isa;
        s.mr = 5;
        s.nr = 2 * w;
        s.kc = kc;
        s.mc = 15;
        s.nc = 3 * s.nr;
        s.unroll_k = 2;
        s.inner_tile_loop = inner;
        s.pack_a = schedule::PackA::Direct;
        s.pack_b = schedule::PackB::Prepacked;
        s.b_panel = panel;
        s.prefetch_next = true;
        runtime::Kernel kernel = runtime::Kernel::compile(op, s);
        for (const reference::CheckCase& c : cases) {
          ASSERT_LE(reference::run_check_case(kernel, c), kTolerance)
              << "M=" << c.shape[0] << " schedule=" << schedule::to_json_text(s);
          ++checked;
        }
      }
  EXPECT_EQ(checked, 2 * 2 * 2 * 7);
}

// B prepacked in tile-wide panels ([N / NR][K][NR], zero-padded): N just off a multiple of
// the tile (the last panel part padding) and smaller than one tile, n blocks of one and of
// several tiles, k blocks shorter than K and all of it, with k streams and prefetch; every
// result against float64, and the packed size is the whole panels.
TEST(GeneratedCode, TilePanelsOfBMatchReference) {
  const schedule::Isa isa = codegen::host_target().isa;
  const int64_t w = schedule::vector_isa(isa).width;
  std::mt19937_64 rng(13);
  int checked = 0;
  for (int64_t n : {w - 3, 3 * w + 5, 8 * w}) {
    const int64_t k = 37;
    te::Operator op = ops::dense(1, 128, n, k, ops::Epilogue::BiasGelu);
    std::vector<reference::CheckCase> cases;
    for (int64_t m : {1, 2, 3, 7, 64, 131})
      cases.push_back(reference::make_check_case(op, {m}, rng));
    for (auto [mr, vectors] : {std::pair<int64_t, int64_t>{3, 2}, {1, 4}, {6, 1}})
      for (int64_t kc : {int64_t{8}, k})
        for (int64_t variant = 0; variant < 2; ++variant) {
          if ((vectors - 1) * w >= n) continue;  // no tile wider than N needs
          schedule::MicroKernelSchedule s;
          s.isa = isa;
          s.mr = mr;
          s.nr = vectors * w;
          s.kc = kc;
          s.mc = mr * 3;
          s.nc = s.nr * (variant ? 1 : std::min<int64_t>(4, (n + s.nr - 1) / s.nr));
          s.unroll_k = 4;
          s.k_streams = variant ? 2 : 1;
          s.prefetch_b = variant ? 16 : 0;
          s.pack_a = variant ? schedule::PackA::Direct : schedule::PackA::Packed;
          s.pack_b = schedule::PackB::Prepacked;
          s.b_panel = schedule::BPanel::Tile;
          runtime::Kernel kernel = runtime::Kernel::compile(op, s);
          EXPECT_EQ(kernel.packed_size({1}) - runtime::Kernel::kPackedHeaderFloats,
                    k * ((n + s.nr - 1) / s.nr) * s.nr)
              << schedule::to_json_text(s);
          for (const reference::CheckCase& c : cases) {
            ASSERT_LE(reference::run_check_case(kernel, c), kTolerance)
                << "N=" << n << " M=" << c.shape[0] << " schedule=" << schedule::to_json_text(s);
            ++checked;
          }
        }
  }
  EXPECT_EQ(checked, 6 * 2 * 2 * (1 + 3 + 3));  // N = W - 3: only the one-vector tile
}

// A tile of m_valid < MR rows at M's edge runs as sub-tiles of the powers of two in
// m_valid: every tile height the registers hold (one, two and three vectors wide), M from
// 1 to past two tiles (every count of edge rows, whole tiles before them or not), A packed
// and read in place, B read in place (the N edge masked: N is not a multiple of the tile)
// and packed, with an epilogue that reads each row (a residual) and each column (a bias).
// The schedule's kernel against the reference at M = 1 .. 2 MR + 1: every edge of one tile
// and of two. Returns the shapes checked.
int check_every_edge(const te::Operator& op, const schedule::MicroKernelSchedule& s,
                     std::mt19937_64& rng) {
  runtime::Kernel kernel = runtime::Kernel::compile(op, s);
  int checked = 0;
  for (int64_t m = 1; m <= 2 * s.mr + 1; ++m) {
    reference::CheckCase c = reference::make_check_case(op, {m}, rng);
    EXPECT_LE(reference::run_check_case(kernel, c), kTolerance)
        << "M=" << m << " schedule=" << schedule::to_json_text(s);
    ++checked;
  }
  return checked;
}

TEST(GeneratedCode, EdgeRowsMatchReferenceForEveryTileHeight) {
  const schedule::Isa isa = codegen::host_target().isa;
  const schedule::VectorIsa& vec = schedule::vector_isa(isa);
  const int64_t w = vec.width;
  te::ShapeVar t = te::shape_var("M", 1, 128);
  te::Operator dense = ops::dense(1, 128, 3 * w + 3, 19, ops::parse_epilogue("bias+residual"));
  te::Operator nn = ops::batch_matmul({t}, 2, t.var, 3 * w + 3, 11, ops::Layout::NN);
  std::mt19937_64 rng(5);
  int checked = 0;
  for (int64_t vectors = 1; vectors <= 3; ++vectors)
    for (int64_t mr = 1; mr <= schedule::max_tile_rows(vectors, vec.registers); ++mr)
      for (bool in_place : {false, true}) {
        const te::Operator& op = in_place ? nn : dense;
        schedule::MicroKernelSchedule s;
        s.isa = isa;
        s.mr = mr;
        s.nr = vectors * w;
        s.kc = in_place ? 11 : 8;  // dense: K = 19 in three blocks, C loaded back
        s.mc = mr * 2;
        s.nc = s.nr * 2;
        s.unroll_k = mr % 2 ? 4 : 1;
        s.pack_a = in_place || mr % 3 ? schedule::PackA::Direct : schedule::PackA::Packed;
        s.pack_b = in_place ? schedule::PackB::Direct : schedule::PackB::Prepacked;
        checked += check_every_edge(op, s, rng);
      }
  EXPECT_GE(checked, 2 * (3 + 5 + 7 + 9 + 11 + 13 + 15 + 17 + 19));
}

// Edges whose plan has a pass taller than the rows left (schedule::edge_passes: where a
// tile's B comes from L2, 3 rows of a 6-row tile are planned as one pass of 4, which runs
// as a pass of 3): every tile height and M up to two tiles and one more, with K in two
// k-blocks (C loaded back between them), a residual read per row and an edge column block.
TEST(GeneratedCode, EdgePassesTallerThanTheRowsLeftMatchReference) {
  const schedule::Isa isa = codegen::host_target().isa;
  const schedule::VectorIsa& vec = schedule::vector_isa(isa);
  const int64_t w = vec.width, k = 1100, kc = 550;
  te::Operator dense = ops::dense(1, 128, 3 * w + 3, k, ops::parse_epilogue("bias+residual"));
  std::mt19937_64 rng(11);
  int heights = 0, repeating = 0;
  for (int64_t vectors = 2; vectors <= 3; ++vectors)
    for (int64_t mr = 3; mr <= schedule::max_tile_rows(vectors, vec.registers); ++mr) {
      ++heights;
      bool repeats = false;
      for (int64_t rows = 1; rows < mr; ++rows)
        for (const schedule::EdgePass& p : schedule::edge_passes(mr, vectors, 4 * w, kc, rows))
          repeats |= p.rows < p.height;
      if (!repeats) continue;
      ++repeating;
      const schedule::MicroKernelSchedule s{
          .isa = isa,
          .mr = mr,
          .nr = vectors * w,
          .kc = kc,
          .mc = mr * 2,
          .nc = vectors * w * 2,
          .unroll_k = mr % 2 ? 4 : 2,
          .pack_a = mr % 3 ? schedule::PackA::Direct : schedule::PackA::Packed,
          .pack_b = schedule::PackB::Prepacked};
      check_every_edge(dense, s, rng);  // every M up to two tiles and one more
    }
  // Most heights of 2 and 3 vectors have such a pass: AVX-512 17 of 19, AVX2 (16
  // registers: tiles of at most 6 rows) 4 of 6.
  EXPECT_GT(2 * repeating, heights) << repeating << " of " << heights << " heights";
  EXPECT_GE(repeating, 4);
}

// An epilogue that calls a transcendental function runs after the tile's store, as a loop
// over the tile's rows reading C back (codegen: epilogue_after_store): every tile height,
// M up to two tiles and one more (every edge pass, those that repeat a row included), K
// in two k-blocks (the epilogue on the last only), an edge column block whose last vector
// straddles N, inputs read per column (bias), per element (residual) and per row.
TEST(GeneratedCode, EpiloguesAfterTheStoreMatchReferenceOnEveryEdge) {
  const schedule::Isa isa = codegen::host_target().isa;
  const schedule::VectorIsa& vec = schedule::vector_isa(isa);
  const int64_t w = vec.width;
  std::mt19937_64 rng(23);
  int checked = 0;
  for (const char* epilogue : {"bias+residual+gelu", "scale+bias+gelu_tanh", "residual+tanh"}) {
    te::Operator dense = ops::dense(1, 128, 3 * w + 3, 37, ops::parse_epilogue(epilogue));
    for (int64_t vectors = 1; vectors <= 3; ++vectors)
      for (int64_t mr = 1; mr <= schedule::max_tile_rows(vectors, vec.registers); mr += 2) {
        const schedule::MicroKernelSchedule s{.isa = isa,
                                              .mr = mr,
                                              .nr = vectors * w,
                                              .kc = 20,
                                              .mc = mr * 2,
                                              .nc = vectors * w * 2,
                                              .unroll_k = 4,
                                              .pack_a = schedule::PackA::Direct,
                                              .pack_b = schedule::PackB::Prepacked};
        checked += check_every_edge(dense, s, rng);
      }
  }
  EXPECT_GE(checked, 3 * (3 + 7 + 11 + 15 + 19));
  // The batched case of MatchesReferenceForEveryShape reads a per-row input (tanh).
}

// Where each epilogue is emitted: a transcendental one once per vector of a row, in one
// loop after every pass has stored; a cheap one on the registers (no such loop). A 6 x 2W
// tile's kernel with bias + GELU: 26 divisions and 2.6x the bias-only kernel's IR on the
// registers, 8 and 1.6x with a loop per tile height, 2 with one loop per kernel.
TEST(GeneratedCode, ATranscendentalEpilogueIsEmittedOncePerVectorOfARowPerKernel) {
  const schedule::Isa isa = codegen::host_target().isa;
  const int64_t w = schedule::vector_isa(isa).width;
  const schedule::MicroKernelSchedule s{.isa = isa,
                                        .mr = 6,
                                        .nr = 2 * w,
                                        .kc = 64,
                                        .mc = 12,
                                        .nc = 4 * w,
                                        .unroll_k = 4,
                                        .pack_a = schedule::PackA::Direct,
                                        .pack_b = schedule::PackB::Prepacked};
  auto ir_text = [&](const char* epilogue) {
    te::Operator op = ops::dense(1, 128, 4 * w, 64, ops::parse_epilogue(epilogue));
    return codegen::llvm_ir_text(lower::lower(schedule::bind(s, op)), codegen::host_target(),
                                 false);
  };
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  const std::string bias = ir_text("bias"), gelu = ir_text("bias+gelu");
  EXPECT_EQ(count(bias, "epilogue.row"), 0u);
  EXPECT_GT(count(gelu, "epilogue.row"), 0u);
  // fdiv: GELU's one division per vector (the bias-only kernel has none).
  EXPECT_EQ(count(bias, " fdiv "), 0u);
  // One loop over the rows after every pass has stored (not one per tile height): one
  // division for each of a row's two vectors.
  EXPECT_EQ(count(gelu, " fdiv "), 2u);
  EXPECT_LT(gelu.size(), bias.size() * 3 / 2);
}

// Tiles of dot products (vector_axis k): every MR x NR the registers hold, on a product
// whose epilogue reads a per-row scale and a residual, with k blocks that split K and a K
// that ends inside a vector (masked last step), unrolled 1, 3 and 8 times (1 to 8
// copies of the accumulators). A and B are read in place: the lowered loops pack nothing.
TEST(GeneratedCode, DotProductTilesMatchReferenceForEveryTile) {
  const schedule::Isa isa = codegen::host_target().isa;
  const schedule::VectorIsa& vec = schedule::vector_isa(isa);
  te::Operator op = batched_epilogue_case();  // K = 18: two whole vectors of 8 and a rest
  std::mt19937_64 rng(11);
  std::vector<reference::CheckCase> cases;
  for (int64_t m : {1, 2, 5, 7, 64, 129}) cases.push_back(reference::make_check_case(op, {m}, rng));
  int tiles = 0;
  for (int64_t nr = 1; nr <= 8; ++nr)
    for (int64_t mr = 1; mr <= 4; ++mr) {
      if (schedule::dot_tile_registers(mr, nr) > vec.registers) continue;
      ++tiles;
      schedule::MicroKernelSchedule s;
      s.isa = isa;
      s.vector_axis = schedule::Axis::K;
      s.mr = mr;
      s.nr = nr;
      s.kc = (mr + nr) % 2 ? 18 : 7;
      s.mc = mr * 2;
      s.nc = nr * 3;
      s.unroll_k = std::vector<int64_t>{1, 3, 8}[(mr * nr) % 3];
      s.parallel = (mr + nr) % 3 ? schedule::ParallelAxis::Batch : schedule::ParallelAxis::None;
      s.pack_a = schedule::PackA::Direct;
      s.pack_b = schedule::PackB::Direct;
      runtime::Kernel kernel = runtime::Kernel::compile(op, s);
      const std::string loops = kernel.loop_ir();
      EXPECT_NE(loops.find("dot products"), std::string::npos) << loops;
      EXPECT_EQ(kernel.scratch_bytes(), 0) << "a dot-product tile packs nothing";
      for (const reference::CheckCase& c : cases)
        ASSERT_LE(reference::run_check_case(kernel, c), kTolerance)
            << "M=" << c.shape[0] << " schedule=" << schedule::to_json_text(s);
    }
  EXPECT_GE(tiles, 20);
  // An outer-product tile packs its A block (mc x kc) and B block (nc x kc), each 64-byte
  // aligned in the scratch.
  schedule::MicroKernelSchedule packed;
  packed.isa = isa;
  packed.mr = 2;
  packed.nr = vec.width;
  packed.kc = 18;
  packed.mc = 4;
  packed.nc = vec.width;
  EXPECT_EQ(runtime::Kernel::compile(op, packed).scratch_bytes(),
            round_up(4 * 4 * 18, 64) + round_up(4 * vec.width * 18, 64));
}

schedule::MicroKernelSchedule parallel_schedule() {
  schedule::MicroKernelSchedule s;
  s.isa = codegen::host_target().isa;
  s.mr = 4;
  s.nr = s.isa == schedule::Isa::Avx512 ? 32 : 16;
  s.kc = 40;
  s.mc = 8;
  s.nc = s.nr * 2;
  s.parallel = schedule::ParallelAxis::M;
  s.pack_b = schedule::PackB::Prepacked;
  return s;
}

TEST(Runtime, OneKernelCalledFromManyThreadsAtOnce) {
  te::Operator op = ops::dense(1, 128, 96, 77, ops::Epilogue::BiasGelu);
  runtime::Kernel kernel = runtime::Kernel::compile(op, parallel_schedule());
  std::mt19937_64 rng(11);
  std::vector<reference::CheckCase> cases;
  for (int64_t m : {1, 9, 50, 128, 300, 77})
    cases.push_back(reference::make_check_case(op, {m}, rng));
  std::vector<double> errors(cases.size() * 20);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < cases.size(); ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep)
        errors[t * 20 + rep] = reference::run_check_case(kernel, cases[t]);
    });
  for (std::thread& t : threads) t.join();
  for (double e : errors) EXPECT_LE(e, kTolerance);
}

TEST(Runtime, ResultsDoNotDependOnThreadCount) {
  te::Operator op = ops::dense(1, 128, 64, 100, ops::Epilogue::Bias);
  runtime::Kernel kernel = runtime::Kernel::compile(op, parallel_schedule());
  std::mt19937_64 rng(12);
  reference::CheckCase c = reference::make_check_case(op, {123}, rng);
  runtime::ThreadPool& pool = runtime::ThreadPool::global();
  int original = pool.num_threads();
  pool.set_serial_work(0);  // M = 123 is below the serial threshold
  for (int threads : {1, 2, 3}) {
    pool.set_num_threads(threads);
    EXPECT_LE(reference::run_check_case(kernel, c), kTolerance) << threads << " threads";
  }
  pool.set_num_threads(original);
  pool.set_serial_work(runtime::ThreadPool::kSerialWork);
}

}  // namespace
