// Unit tests of lowering: the passes produce the structure the schedule asks for.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "conv1d_op.h"
#include "ir/evaluate.h"
#include "ir/printer.h"
#include "ir/visit.h"
#include "lower/insert_packing.h"
#include "lower/pipeline.h"
#include "ops/batch_matmul.h"
#include "ops/contraction.h"
#include "ops/dense.h"
#include "test_support.h"

using namespace dietcode;

namespace {

schedule::MicroKernelSchedule schedule_for_dense() {
  schedule::MicroKernelSchedule s =
      dietcode::testing::make_schedule(schedule::Isa::Avx2, 6, 16, 128, 24, 64);
  s.parallel = schedule::ParallelAxis::M;
  return s;
}

int count(const ir::Stmt& s, ir::StmtKind kind) {
  int n = 0;
  ir::visit_stmts(s, [&](const ir::Stmt& x) { n += x.kind() == kind; });
  return n;
}

}  // namespace

TEST(Contraction, FindsAxesOperandsAndEpilogue) {
  ops::Contraction c =
      ops::match_contraction(ops::dense(1, 128, 2304, 768, ops::Epilogue::BiasGelu));
  EXPECT_EQ(c.a.tensor.name(), "X");
  EXPECT_EQ(c.b.tensor.name(), "W");
  EXPECT_TRUE(c.b.constant);
  ASSERT_EQ(c.epilogue_inputs.size(), 1u);
  EXPECT_EQ(c.epilogue_inputs[0].operand.tensor.name(), "bias");
  EXPECT_EQ(ir::to_string(c.epilogue), "gelu(product + bias_0)");
  EXPECT_TRUE(c.batch_axes.empty());
}

TEST(Lower, PassesAreLoggedInOrder) {
  std::vector<std::string> passes;
  lower::lower(schedule::bind(schedule_for_dense(), ops::dense(1, 128, 256, 256)),
               [&](const std::string& pass, const std::string&) { passes.push_back(pass); });
  EXPECT_EQ(passes, (std::vector<std::string>{"reference_loops", "build_loop_nest", "mark_parallel",
                                              "insert_packing", "simplify"}));
}

TEST(Lower, PackedScheduleHasPanelsMicroKernelAndOneParallelLoop) {
  lower::LoweredKernel k =
      lower::lower(schedule::bind(schedule_for_dense(), ops::dense(1, 128, 256, 256)));
  ir::visit_stmts(k.compute.body, [&](const ir::Stmt& s) {
    if (const auto* p = s.as<ir::PackStageNode>()) {
      EXPECT_TRUE(lower::packs_by_transposing(*p))
          << "insert_packing leaves only the stages code generation transposes";
    }
  });
  EXPECT_EQ(count(k.compute.body, ir::StmtKind::MicroKernel), 1);
  EXPECT_EQ(count(k.compute.body, ir::StmtKind::Allocate), 2);
  int parallel = 0;
  ir::visit_stmts(k.compute.body, [&](const ir::Stmt& s) {
    if (const auto* f = s.as<ir::ForNode>()) parallel += f->for_kind == ir::ForKind::Parallel;
  });
  EXPECT_EQ(parallel, 1);
  EXPECT_FALSE(k.prepacked_b);
}

TEST(Lower, PanelsPackedInsideTheParallelLoopAreAllocatedPerTask) {
  // Order n, k, m with parallel m: B is packed once, outside; A per task, inside.
  lower::LoweredKernel k =
      lower::lower(schedule::bind(schedule_for_dense(), ops::dense(1, 128, 256, 256)));
  const ir::Stmt& body = k.compute.body;
  ASSERT_EQ(body.kind(), ir::StmtKind::Allocate);
  EXPECT_EQ(body.as<ir::AllocateNode>()->buffer.name(), "W_panel");
  bool a_inside_parallel = false;
  ir::visit_stmts(body, [&](const ir::Stmt& s) {
    const auto* f = s.as<ir::ForNode>();
    if (f && f->for_kind == ir::ForKind::Parallel && f->body.as<ir::AllocateNode>())
      a_inside_parallel = f->body.as<ir::AllocateNode>()->buffer.name() == "X_panel";
  });
  EXPECT_TRUE(a_inside_parallel);
}

// S V of attention: 12 heads of T x T times T x 64, and a 2 x 32 tile reading both
// operands in place.
static const std::pair<te::ShapeVar, te::Operator>& attention_context() {
  static const std::pair<te::ShapeVar, te::Operator> c = [] {
    te::ShapeVar t = te::shape_var("T", 1, 128);
    return std::make_pair(t, ops::batch_matmul({t}, 12, t.var, 64, t.var, ops::Layout::NN));
  }();
  return c;
}

static schedule::MicroKernelSchedule in_place_schedule() {
  schedule::MicroKernelSchedule s =
      dietcode::testing::make_schedule(schedule::Isa::Avx2, 2, 32, 64, 32, 64);
  s.pack_a = schedule::PackA::Direct;
  s.pack_b = schedule::PackB::Direct;
  return s;
}

TEST(Lower, BatchLoopsAroundTheParallelLoopAreFusedIntoIt) {
  // Parallel over M's blocks alone, a short T (one block) would make 12 parallel loops of
  // one task each.
  const auto& [t, op] = attention_context();
  schedule::MicroKernelSchedule s = in_place_schedule();
  s.parallel = schedule::ParallelAxis::M;
  s.loop_order = {schedule::Axis::M, schedule::Axis::K, schedule::Axis::N};
  const ir::Stmt body = lower::lower(schedule::bind(s, op)).compute.body;
  const auto* top = body.as<ir::ForNode>();
  ASSERT_NE(top, nullptr) << ir::to_string(body);
  EXPECT_EQ(top->for_kind, ir::ForKind::Parallel);
  EXPECT_EQ(ir::evaluate_int(top->extent, {{t.var.get(), 5}}), 12) << "12 heads x 1 block";
  EXPECT_EQ(ir::evaluate_int(top->extent, {{t.var.get(), 100}}), 12 * 4);
  int parallel = 0;
  ir::visit_stmts(body, [&](const ir::Stmt& x) {
    if (const auto* f = x.as<ir::ForNode>()) parallel += f->for_kind == ir::ForKind::Parallel;
  });
  EXPECT_EQ(parallel, 1);

  // M's blocks inside K's: the k-blocks add into the same C, so the head loop is not fused
  // across them (it is not directly around the parallel loop).
  s.loop_order = {schedule::Axis::K, schedule::Axis::M, schedule::Axis::N};
  const ir::Stmt serial_k = lower::lower(schedule::bind(s, op)).compute.body;
  ASSERT_NE(serial_k.as<ir::ForNode>(), nullptr);
  EXPECT_EQ(serial_k.as<ir::ForNode>()->for_kind, ir::ForKind::Serial);
}

TEST(Lower, BatchLoopInnerSitsDirectlyAroundTheMicroKernel) {
  // batch_loop 'inner': the head loop is the micro-kernel's parent, inside the tile loops;
  // nothing else is in it. Refused where an operand is packed per block or the heads are
  // the parallel axis, and for an operator without a batch axis.
  const te::Operator& op = attention_context().second;
  schedule::MicroKernelSchedule s = in_place_schedule();
  s.parallel = schedule::ParallelAxis::N;
  s.batch_inner = true;
  const ir::Stmt body = lower::lower(schedule::bind(s, op)).compute.body;
  int batch_loops = 0;
  ir::visit_stmts(body, [&](const ir::Stmt& x) {
    const auto* f = x.as<ir::ForNode>();
    if (!f || f->var.name() != "b") return;
    ++batch_loops;
    EXPECT_EQ(f->for_kind, ir::ForKind::Serial);
    EXPECT_NE(f->body.as<ir::MicroKernelNode>(), nullptr) << ir::to_string(x);
  });
  EXPECT_EQ(batch_loops, 1) << ir::to_string(body);
  const auto* top = body.as<ir::ForNode>();
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->for_kind, ir::ForKind::Parallel) << "the n blocks, not the heads, outermost";
  EXPECT_EQ(schedule::schedule_from_json_text(schedule::to_json_text(s)), s);
  EXPECT_NE(schedule::to_json_text(s).find("\"batch_loop\":\"inner\""), std::string::npos);

  schedule::MicroKernelSchedule packed = s;
  packed.pack_b = schedule::PackB::PerBlock;
  EXPECT_USER_ERROR(schedule::bind(packed, op), "batch_loop 'inner'");
  schedule::MicroKernelSchedule heads = s;
  heads.parallel = schedule::ParallelAxis::Batch;
  EXPECT_USER_ERROR(schedule::bind(heads, op), "parallel 'batch'");
  schedule::MicroKernelSchedule dense = schedule_for_dense();
  dense.pack_a = schedule::PackA::Direct;
  dense.pack_b = schedule::PackB::Prepacked;
  dense.batch_inner = true;
  EXPECT_USER_ERROR(schedule::bind(dense, ops::dense(1, 128, 250, 256)), "no batch axis");
}

TEST(Lower, PrepackedScheduleProducesAPrepackProgram) {
  schedule::MicroKernelSchedule s = schedule_for_dense();
  s.pack_b = schedule::PackB::Prepacked;
  s.pack_a = schedule::PackA::Direct;
  lower::LoweredKernel k = lower::lower(schedule::bind(s, ops::dense(1, 128, 250, 256)));
  EXPECT_TRUE(k.prepacked_b);
  EXPECT_EQ(k.prepacked_input, 1);
  EXPECT_EQ(k.compute.buffers[1].name(), "W_packed");
  EXPECT_EQ(count(k.compute.body, ir::StmtKind::Allocate), 0) << "nothing is packed per call";
  // N = 250 padded to 256 (a multiple of the vector width), times K = 256.
  EXPECT_EQ(ir::evaluate_int(k.packed_b_size, {}), 256 * 256);
}

TEST(Lower, ArbitraryContractionLowersWithoutChanges) {
  te::Operator op = dietcode::testing::conv1d(1, 64, 3, 5, 32);
  schedule::MicroKernelSchedule s = schedule_for_dense();
  s.kc = 15;
  s.nc = 32;
  EXPECT_NO_THROW(lower::lower(schedule::bind(s, op)));
  s.pack_a = schedule::PackA::Direct;
  EXPECT_USER_ERROR(lower::lower(schedule::bind(s, op)), "not affine");
}

TEST(Lower, PrefetchNextSpreadsTheNextTileEvenlyOverTheCallsOfATile) {
  // prefetch_next with m the inner tile loop: the row tiles of a column tile in a k-block
  // (the calls that reuse its B) together prefetch every row of the next tile's k-block
  // (all NR / W vectors of each), in order and in even shares, for every length of the M
  // block, however few the calls: a k-loop iteration of U k-steps prefetches the row where
  // it stands, and U rows where the calls are fewer than U; n inner: one line per k-step.
  // Both panel layouts (they differ only in the vectors' distances, the emitter's part).
  const int64_t K = 64, kc = 32, N = 256, W = 16, U = 4;
  for (schedule::BPanel panel : {schedule::BPanel::Vector, schedule::BPanel::Tile}) {
    schedule::MicroKernelSchedule s;
    s.isa = schedule::Isa::Avx512;
    s.mr = 5;
    s.nr = 64;
    s.kc = kc;
    s.mc = 130;
    s.nc = 128;
    s.parallel = schedule::ParallelAxis::None;
    s.inner_tile_loop = schedule::Axis::M;
    s.unroll_k = U;
    s.pack_a = schedule::PackA::Direct;
    s.pack_b = schedule::PackB::Prepacked;
    s.b_panel = panel;
    s.prefetch_next = true;
    auto micro_kernel = [&](const schedule::MicroKernelSchedule& x) {
      const ir::MicroKernelNode* mk = nullptr;
      lower::LoweredKernel k = lower::lower(schedule::bind(x, ops::dense(1, 128, N, K)));
      ir::visit_stmts(k.compute.body, [&](const ir::Stmt& st) {
        if (const auto* m = st.as<ir::MicroKernelNode>()) mk = m;
      });
      return std::make_pair(std::move(k), mk);
    };
    auto [kernel, mk] = micro_kernel(s);
    ASSERT_NE(mk, nullptr);
    ASSERT_TRUE(mk->prefetch_next_offset.defined());
    ASSERT_TRUE(mk->prefetch_next_spread.defined());
    ASSERT_TRUE(mk->prefetch_next_first.defined());
    ASSERT_TRUE(mk->prefetch_next_rate.defined());
    EXPECT_EQ(mk->prefetch_next_lines, s.nr / W);
    // (Which tile's B it prefetches: PrefetchNextFollowsTheCallsToTheBlockVisitedNext.)
    // The variables the spread reads: the M block's length, the row tile, the k-block's
    // length.
    const ir::VarNode *m_len = nullptr, *m_tile = nullptr, *k_len = nullptr;
    auto find_vars = [&](const ir::Expr& e) {
      if (const auto* v = e.as<ir::VarNode>()) {
        if (v->name == "m_len")
          m_len = v;
        else if (v->name == "m_tile")
          m_tile = v;
        else if (v->name == "k_len")
          k_len = v;
        else
          ADD_FAILURE() << "the spread reads " << v->name;
      }
    };
    for (const ir::Expr& e :
         {mk->prefetch_next_first, mk->prefetch_next_rate, mk->prefetch_next_spread})
      ir::visit_exprs(e, find_vars);
    ASSERT_NE(m_len, nullptr);
    ASSERT_NE(m_tile, nullptr);
    ASSERT_NE(k_len, nullptr);
    const int64_t shift = ir::MicroKernelNode::kPrefetchRateShift;
    for (int64_t k_block : {kc, int64_t{7}})  // a whole block and a short last one
      for (int64_t rows = 1; rows <= 40; ++rows) {
        const int64_t calls = (rows + s.mr - 1) / s.mr;
        std::set<int64_t> covered;  // rows of the next tile's k-block
        int64_t last = 0;           // the row of the previous iteration, calls in order
        for (int64_t t = 0; t < calls; ++t) {
          const ir::Bindings at_call{{m_len, rows}, {m_tile, t}, {k_len, k_block}};
          const int64_t first = ir::evaluate_int(mk->prefetch_next_first, at_call);
          const int64_t rate = ir::evaluate_int(mk->prefetch_next_rate, at_call);
          const bool spread = ir::evaluate_int(mk->prefetch_next_spread, at_call) != 0;
          EXPECT_EQ(spread, calls < U) << "rows " << rows;
          // An even share: call t starts at row t x k_len / calls (the rate is rounded down,
          // so at most a row before it).
          const int64_t start = (first * rate) >> shift;
          EXPECT_LE(start, t * k_block / calls) << "rows " << rows << " call " << t;
          EXPECT_GE(start, t * k_block / calls - 1) << "rows " << rows << " call " << t;
          // The main loop's iterations at g = 0, U, 2U, ..., then single steps.
          for (int64_t g = 0; g < k_block; g += (g + U <= k_block ? U : 1)) {
            const int64_t r = ((first + g) * rate) >> shift;
            EXPECT_GE(r, last) << "rows " << rows << " call " << t << " step " << g;
            EXPECT_LT(r, k_block);
            last = r;
            const int64_t n = spread && g + U <= k_block ? U : 1;
            for (int64_t i = 0; i < n; ++i) covered.insert(r + i);
          }
        }
        for (int64_t r = 0; r < k_block; ++r)
          EXPECT_TRUE(covered.count(r)) << "rows " << rows << ", k-block of " << k_block << ": row "
                                        << r << " not prefetched";
      }
    s.inner_tile_loop = schedule::Axis::N;
    auto [n_kernel, n_mk] = micro_kernel(s);
    ASSERT_NE(n_mk, nullptr);
    EXPECT_EQ(n_mk->prefetch_next_lines, 1);
  }
}

TEST(Lower, PrefetchNextFollowsTheCallsToTheBlockVisitedNext) {
  // prefetch_next with m the inner tile loop: each column tile prefetches the B of the
  // column tile whose calls come next, whatever the block loops' order: the next tile of
  // the block, or after the block's last tile, the first tile of the block visited next
  // (with k-blocks shorter than K and [n, k, m], the same columns' next k-block, not the
  // next block of columns). Simulated over every call of the loop nest: blocks of N, K and
  // M with short last blocks, a short last column tile, both panel layouts.
  const int64_t N = 200, K = 80, M = 128, nr = 64, nc = 128, kc = 32, mc = 50;
  std::vector<schedule::LoopOrder> orders;
  schedule::LoopOrder order{schedule::Axis::K, schedule::Axis::M, schedule::Axis::N};
  std::sort(order.begin(), order.end());
  do orders.push_back(order);
  while (std::next_permutation(order.begin(), order.end()));
  ASSERT_EQ(orders.size(), 6u);
  for (schedule::BPanel panel : {schedule::BPanel::Vector, schedule::BPanel::Tile})
    for (const schedule::LoopOrder& loop_order : orders) {
      SCOPED_TRACE(schedule::to_string(loop_order) +
                   (panel == schedule::BPanel::Tile ? ", tile panels" : ", vector panels"));
      schedule::MicroKernelSchedule s;
      s.isa = schedule::Isa::Avx512;
      s.mr = 5;
      s.nr = nr;
      s.kc = kc;
      s.mc = mc;
      s.nc = nc;
      s.loop_order = loop_order;
      s.parallel = schedule::ParallelAxis::None;
      s.inner_tile_loop = schedule::Axis::M;
      s.unroll_k = 4;
      s.pack_a = schedule::PackA::Direct;
      s.pack_b = schedule::PackB::Prepacked;
      s.b_panel = panel;
      s.prefetch_next = true;
      lower::LoweredKernel kernel = lower::lower(schedule::bind(s, ops::dense(1, M, N, K)));
      const ir::MicroKernelNode* mk = nullptr;
      ir::visit_stmts(kernel.compute.body, [&](const ir::Stmt& st) {
        if (const auto* m = st.as<ir::MicroKernelNode>()) mk = m;
      });
      ASSERT_NE(mk, nullptr);
      ASSERT_TRUE(mk->prefetch_next_offset.defined());
      // The loop nest's variables, bound by name at each call.
      std::map<std::string, int64_t> at;
      auto bind = [&](const ir::Expr& e) {
        ir::Bindings b;
        ir::visit_exprs(e, [&](const ir::Expr& x) {
          if (const auto* v = x.as<ir::VarNode>()) {
            auto it = at.find(v->name);
            if (it == at.end())
              ADD_FAILURE() << "unexpected variable " << v->name;
            else
              b[v] = it->second;
          }
        });
        return b;
      };
      // The calls' column tiles in the order the loops run them (the row tiles of a column
      // tile share its B and its prefetch offset: row tile 0 stands for them).
      struct Call {
        int64_t b_offset, prefetch_offset;
      };
      std::vector<Call> calls;
      auto blocks = [&](schedule::Axis a) {
        const int64_t extent = a == schedule::Axis::N ? N : a == schedule::Axis::K ? K : M;
        const int64_t size = a == schedule::Axis::N ? nc : a == schedule::Axis::K ? kc : mc;
        return std::make_pair(extent, size);
      };
      auto set_block = [&](schedule::Axis a, int64_t begin) {
        const std::string name = a == schedule::Axis::N ? "n" : a == schedule::Axis::K ? "k" : "m";
        auto [extent, size] = blocks(a);
        at[name + "0"] = begin;
        at[name + "_len"] = std::min(size, extent - begin);
        at[name + "_block"] = begin / size;
      };
      at["M"] = M;
      at["m_tile"] = 0;
      auto [e0, s0] = blocks(loop_order[0]);
      auto [e1, s1] = blocks(loop_order[1]);
      auto [e2, s2] = blocks(loop_order[2]);
      for (int64_t b0 = 0; b0 < e0; b0 += s0)
        for (int64_t b1 = 0; b1 < e1; b1 += s1)
          for (int64_t b2 = 0; b2 < e2; b2 += s2) {
            set_block(loop_order[0], b0);
            set_block(loop_order[1], b1);
            set_block(loop_order[2], b2);
            for (int64_t t = 0; t * nr < at["n_len"]; ++t) {
              at["n_tile"] = t;
              calls.push_back(
                  Call{ir::evaluate_int(mk->b.offset, bind(mk->b.offset)),
                       ir::evaluate_int(mk->prefetch_next_offset, bind(mk->prefetch_next_offset))});
            }
          }
      ASSERT_EQ(calls.size(), size_t{2 * 3 * 3 * 2});  // tiles x k-blocks x m-blocks
      for (size_t i = 0; i + 1 < calls.size(); ++i)
        EXPECT_EQ(calls[i].b_offset + calls[i].prefetch_offset, calls[i + 1].b_offset)
            << "call " << i;
      // After the last call: an address inside the packed B.
      const int64_t end = calls.back().b_offset + calls.back().prefetch_offset;
      EXPECT_GE(end, 0);
      EXPECT_LT(end, ir::evaluate_int(kernel.packed_b_size, {}));
    }
}
