// Unit tests of micro-kernel schedules: JSON round trip and validation.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "ops/batch_matmul.h"
#include "ops/dense.h"
#include "schedule/micro_kernel.h"
#include "schedule/random_schedule.h"
#include "test_support.h"

using namespace dietcode;
using schedule::MicroKernelSchedule;

namespace {

MicroKernelSchedule good() {
  MicroKernelSchedule s =
      dietcode::testing::make_schedule(schedule::Isa::Avx2, 6, 16, 256, 60, 512);
  s.parallel = schedule::ParallelAxis::N;
  s.pack_b = schedule::PackB::Prepacked;
  return s;
}

}  // namespace

TEST(Schedule, JsonRoundTrip) {
  MicroKernelSchedule s = good();
  EXPECT_EQ(schedule::schedule_from_json_text(schedule::to_json_text(s)), s);
  std::mt19937_64 rng(3);
  te::Operator op = ops::dense(1, 128, 768, 768);
  for (int i = 0; i < 50; ++i) {
    MicroKernelSchedule r = schedule::random_schedule(rng, schedule::Isa::Avx512, op);
    EXPECT_EQ(schedule::schedule_from_json(schedule::to_json(r)), r);
  }
}

TEST(Schedule, RandomSchedulesAreValid) {
  std::mt19937_64 rng(5);
  te::ShapeVar t = te::shape_var("T", 1, 128);
  te::Operator op = ops::batch_matmul({t}, 12, t.var, 64, 64, ops::Layout::NN);
  for (int i = 0; i < 100; ++i)
    EXPECT_NO_THROW(schedule::bind(schedule::random_schedule(rng, schedule::Isa::Avx2, op), op));
}

TEST(Schedule, ValidScheduleIsAccepted) {
  EXPECT_NO_THROW(schedule::bind(good(), ops::dense(1, 128, 2304, 768)));
}

TEST(Schedule, RejectsTooManyVectorRegisters) {
  MicroKernelSchedule s = good();
  s.mr = 8;  // 8 x 2 accumulators + 2 + 1 = 19 > 16 on AVX2
  s.mc = 64;
  EXPECT_USER_ERROR(schedule::validate(s), "needs 19 vector registers");
  s.isa = schedule::Isa::Avx512;  // 32 registers, but nr must then be a multiple of 16: it is
  EXPECT_NO_THROW(schedule::validate(s));
}

TEST(Schedule, WideTilesCountOneBVectorAtATime) {
  // mr < vectors: the broadcasts stay live and B is loaded one vector at a time.
  EXPECT_EQ(schedule::tile_registers(1, 8), 8 + 1 + 1);
  EXPECT_EQ(schedule::tile_registers(2, 6), 12 + 2 + 1);
  EXPECT_EQ(schedule::tile_registers(3, 4), 12 + 3 + 1);
  EXPECT_EQ(schedule::tile_registers(6, 2), 12 + 2 + 1);  // tall: B first
  EXPECT_EQ(schedule::max_tile_vectors(1, 16), 14);
  EXPECT_EQ(schedule::max_tile_vectors(2, 16), 6);
  EXPECT_EQ(schedule::max_tile_vectors(3, 16), 4);
  EXPECT_EQ(schedule::max_tile_rows(2, 16), 6);
  EXPECT_EQ(schedule::max_tile_rows(1, 16), 14);
  EXPECT_EQ(schedule::max_tile_rows(15, 16), 0);
  for (int64_t v = 1; v <= 14; ++v)
    for (int64_t mr = 1; mr <= 14; ++mr)
      EXPECT_EQ(mr <= schedule::max_tile_rows(v, 16), schedule::tile_registers(mr, v) <= 16);
  MicroKernelSchedule s = good();
  s.mr = 1;
  s.nr = 64;
  s.mc = 8;
  s.nc = 128;
  EXPECT_NO_THROW(schedule::validate(s));
  s.nr = 120;  // 15 vectors: 15 + 1 + 1 = 17
  s.nc = 120;
  EXPECT_USER_ERROR(schedule::validate(s), "needs 17 vector registers");
}

TEST(Schedule, RejectsNrOffVectorWidth) {
  MicroKernelSchedule s = good();
  s.nr = 12;
  EXPECT_USER_ERROR(schedule::validate(s), "multiple of the avx2 vector width 8");
}

TEST(Schedule, RejectsUnknownAxesAndBadOrders) {
  // Names are checked where they enter (JSON), the typed fields by validate().
  nlohmann::json j = schedule::to_json(good());
  j["loop_order"] = {"n", "q", "m"};
  EXPECT_USER_ERROR(schedule::schedule_from_json(j), "unknown axis 'q'");
  j["loop_order"] = {"n", "k"};
  EXPECT_USER_ERROR(schedule::schedule_from_json(j), "exactly once");
  j = schedule::to_json(good());
  j["parallel"] = "k";
  EXPECT_USER_ERROR(schedule::schedule_from_json(j), "reduction");
  j["parallel"] = "z";
  EXPECT_USER_ERROR(schedule::schedule_from_json(j), "unknown parallel axis 'z'");
  j = schedule::to_json(good());
  j["inner_tile_loop"] = "k";
  EXPECT_USER_ERROR(schedule::schedule_from_json(j), "unknown inner_tile_loop 'k'");
  MicroKernelSchedule s = good();
  s.loop_order = {schedule::Axis::N, schedule::Axis::N, schedule::Axis::M};
  EXPECT_USER_ERROR(schedule::validate(s), "exactly once");
  s = good();
  s.inner_tile_loop = schedule::Axis::K;
  EXPECT_USER_ERROR(schedule::validate(s), "inner_tile_loop 'k' is the reduction");
}

TEST(Schedule, EqualityAndDigestFollowEveryField) {
  // Two schedules that differ in any one field are unequal and digest apart; equal
  // ones digest alike, on every run (the digest keys held-out splits).
  MicroKernelSchedule a = good();
  std::vector<MicroKernelSchedule> variants(13, a);
  variants[0].isa = schedule::Isa::Avx512;
  variants[1].mr += 1;
  variants[2].nr += 8;
  variants[3].kc += 1;
  variants[4].mc += 6;
  variants[5].nc += 16;
  variants[6].loop_order = {schedule::Axis::K, schedule::Axis::N, schedule::Axis::M};
  variants[7].parallel = schedule::ParallelAxis::M;
  variants[8].inner_tile_loop = schedule::Axis::N;
  variants[9].unroll_k += 1;
  variants[10].pack_a = schedule::PackA::Direct;
  variants[11].pack_b = schedule::PackB::PerBlock;
  variants[12].k_streams = 2;
  std::set<uint64_t> digests{a.digest()};
  for (size_t i = 0; i < variants.size(); ++i) {
    EXPECT_FALSE(variants[i] == a) << i;
    EXPECT_TRUE(digests.insert(variants[i].digest()).second) << i;
  }
  MicroKernelSchedule copy = schedule::schedule_from_json_text(schedule::to_json_text(a));
  EXPECT_EQ(copy, a);
  EXPECT_EQ(copy.digest(), a.digest());
  // The digest is a function of the fields alone, pinned: if it changed, held-out splits
  // of existing records would move.
  EXPECT_EQ(MicroKernelSchedule{}.digest(), uint64_t{13919410877146264626ULL});
}

TEST(Schedule, KStreamsIsOptionalInJsonAndBoundedByTheUnroll) {
  // One stream is the default and is not written (records and modules written before
  // the field existed read back unchanged, with the same digests).
  MicroKernelSchedule a = good();
  EXPECT_FALSE(schedule::to_json(a).contains("k_streams"));
  MicroKernelSchedule s = a;
  s.k_streams = 4;
  EXPECT_NO_THROW(schedule::validate(s));
  EXPECT_EQ(schedule::to_json(s).at("k_streams"), 4);
  EXPECT_EQ(schedule::schedule_from_json_text(schedule::to_json_text(s)), s);
  s.k_streams = 3;
  EXPECT_USER_ERROR(schedule::validate(s), "k_streams = 3 must be 1, 2 or 4");
  s.k_streams = 4;
  s.unroll_k = 2;
  EXPECT_USER_ERROR(schedule::validate(s), "at most unroll_k = 2");
  nlohmann::json j = schedule::to_json(a);
  j["k_streams"] = "four";
  EXPECT_USER_ERROR(schedule::schedule_from_json(j), "field 'k_streams'");
}

TEST(Schedule, PrefetchBIsOptionalInJsonAndOneOfFewDistances) {
  // No prefetch is the default and is not written: older records and modules read back
  // unchanged, with the same digests; a prefetching schedule has a digest of its own.
  MicroKernelSchedule a = good();
  EXPECT_FALSE(schedule::to_json(a).contains("prefetch_b"));
  MicroKernelSchedule s = a;
  for (int64_t ahead : {16, 32, 64}) {
    s.prefetch_b = ahead;
    EXPECT_NO_THROW(schedule::validate(s));
    EXPECT_EQ(schedule::to_json(s).at("prefetch_b"), ahead);
    EXPECT_EQ(schedule::schedule_from_json_text(schedule::to_json_text(s)), s);
    EXPECT_NE(s.digest(), a.digest());
  }
  s.prefetch_b = 8;
  EXPECT_USER_ERROR(schedule::validate(s), "prefetch_b = 8 must be 0, 16, 32 or 64");
  s = a;
  s.vector_axis = schedule::Axis::K;
  s.pack_a = schedule::PackA::Direct;
  s.pack_b = schedule::PackB::Direct;
  s.mr = 2;
  s.mc = 60;
  s.nr = 4;
  s.nc = 8;
  s.prefetch_b = 32;
  EXPECT_USER_ERROR(schedule::validate(s), "prefetch_b needs vector_axis 'n'");
  nlohmann::json j = schedule::to_json(a);
  j["prefetch_b"] = "far";
  EXPECT_USER_ERROR(schedule::schedule_from_json(j), "field 'prefetch_b'");
}

TEST(Schedule, PrefetchNextIsOptionalInJsonAndNeedsPrepackedOuterProducts) {
  // Off by default and not written: older records and modules read back unchanged, with
  // the same digests; on, a digest of its own, with either tile loop inner.
  MicroKernelSchedule a = good();
  a.pack_b = schedule::PackB::Prepacked;
  EXPECT_FALSE(schedule::to_json(a).contains("prefetch_next"));
  for (schedule::Axis inner : {schedule::Axis::M, schedule::Axis::N}) {
    MicroKernelSchedule s = a;
    s.inner_tile_loop = inner;
    s.prefetch_next = true;
    EXPECT_NO_THROW(schedule::validate(s));
    EXPECT_EQ(schedule::to_json(s).at("prefetch_next"), true);
    EXPECT_EQ(schedule::schedule_from_json_text(schedule::to_json_text(s)), s);
    EXPECT_NE(s.digest(), a.digest());
  }
  MicroKernelSchedule s = a;
  s.prefetch_next = true;
  s.pack_b = schedule::PackB::PerBlock;
  EXPECT_USER_ERROR(schedule::validate(s), "prefetch_next prefetches the prepacked B");
  s.pack_b = schedule::PackB::Direct;
  EXPECT_USER_ERROR(schedule::validate(s), "needs pack_b 'prepacked' and vector_axis 'n'");
  nlohmann::json j = schedule::to_json(a);
  j["prefetch_next"] = 1;
  EXPECT_USER_ERROR(schedule::schedule_from_json(j), "field 'prefetch_next' is 1, expected true");
}

TEST(Schedule, BPanelIsOptionalInJsonAndNeedsPrepackedB) {
  // Vector panels are the default and are not written: older records and modules read back
  // unchanged, with the same digests; tile panels are a layout (and a digest) of their own.
  MicroKernelSchedule a = good();
  a.pack_b = schedule::PackB::Prepacked;
  EXPECT_FALSE(schedule::to_json(a).contains("b_panel"));
  MicroKernelSchedule s = a;
  s.b_panel = schedule::BPanel::Tile;
  EXPECT_NO_THROW(schedule::validate(s));
  EXPECT_EQ(schedule::to_json(s).at("b_panel"), "tile");
  EXPECT_EQ(schedule::schedule_from_json_text(schedule::to_json_text(s)), s);
  EXPECT_NE(s.digest(), a.digest());
  nlohmann::json j = schedule::to_json(a);
  j["b_panel"] = "vector";
  EXPECT_EQ(schedule::schedule_from_json(j), a);
  j["b_panel"] = "wide";
  EXPECT_USER_ERROR(schedule::schedule_from_json(j), "unknown b_panel 'wide'");
  j["b_panel"] = 2;
  EXPECT_USER_ERROR(schedule::schedule_from_json(j), "field 'b_panel'");
  for (schedule::PackB pack : {schedule::PackB::PerBlock, schedule::PackB::Direct}) {
    s.pack_b = pack;
    EXPECT_USER_ERROR(schedule::validate(s), "b_panel 'tile' is a layout of prepacked B");
  }
}

TEST(Schedule, RejectsBlocksThatAreNotTileMultiples) {
  MicroKernelSchedule s = good();
  s.mc = 61;
  EXPECT_USER_ERROR(schedule::validate(s), "mc = 61 must be a positive multiple of mr = 6");
  s = good();
  s.nc = 24;
  EXPECT_USER_ERROR(schedule::validate(s), "nc = 24 must be a positive multiple of nr = 16");
}

TEST(Schedule, RejectsTilesLargerThanAnyAllowedExtent) {
  MicroKernelSchedule s = good();
  EXPECT_USER_ERROR(schedule::bind(s, ops::dense(1, 4, 2304, 768)),
                    "mr = 6 is larger than any allowed M");
  EXPECT_USER_ERROR(schedule::bind(s, ops::dense(1, 128, 8, 768)),
                    "nr = 16 is larger than any allowed N");
  EXPECT_USER_ERROR(schedule::bind(s, ops::dense(1, 128, 2304, 100)),
                    "kc = 256 is larger than any allowed K");
}

TEST(Schedule, RejectsPrepackingAnInputThatChangesPerCall) {
  MicroKernelSchedule s = good();
  s.nc = 64;
  te::ShapeVar t = te::shape_var("T", 1, 128);
  te::Operator op = ops::batch_matmul({t}, 12, t.var, 64, 256, ops::Layout::NT);
  EXPECT_USER_ERROR(schedule::bind(s, op), "needs a constant B");
  s.parallel = schedule::ParallelAxis::Batch;
  s.pack_b = schedule::PackB::PerBlock;
  EXPECT_NO_THROW(schedule::bind(s, op));
}

TEST(Schedule, JsonErrorsNameTheField) {
  EXPECT_USER_ERROR(schedule::schedule_from_json_text("{\"mr\": 4"), "syntax error");
  nlohmann::json j = schedule::to_json(good());
  j["tile"] = 3;
  EXPECT_USER_ERROR(schedule::schedule_from_json(j), "unknown field 'tile'");
  j = schedule::to_json(good());
  j.erase("kc");
  EXPECT_USER_ERROR(schedule::schedule_from_json(j), "missing field 'kc'");
  j = schedule::to_json(good());
  j["mr"] = "six";
  EXPECT_USER_ERROR(schedule::schedule_from_json(j), "field 'mr' is \"six\", expected an integer");
  j = schedule::to_json(good());
  j["isa"] = "sse2";
  EXPECT_USER_ERROR(schedule::schedule_from_json(j), "unknown vector ISA 'sse2'");
  j = schedule::to_json(good());
  j["target"] = "cuda";
  EXPECT_USER_ERROR(schedule::schedule_from_json(j), "target 'cuda' is not supported");
}

// An edge of rows < mr rows at M's end: passes tallest first, of heights that are powers
// of two below mr or mr, all whole but the last, covering exactly the edge's rows.
TEST(Schedule, EdgePassesCoverTheEdgeTallestFirst) {
  using schedule::EdgePass;
  auto plan = [](int64_t mr, int64_t vectors, int64_t bytes, int64_t kc, int64_t rows) {
    std::vector<std::pair<int64_t, int64_t>> out;
    for (const EdgePass& p : schedule::edge_passes(mr, vectors, bytes, kc, rows))
      out.push_back({p.height, p.rows});
    return out;
  };
  using Plan = std::vector<std::pair<int64_t, int64_t>>;
  // 6 x 64 on AVX-512, B of a tile (768 x 64 floats) from L2: a pass of 3 rows' B costs
  // more than one row's multiply-adds, so 3 rows are one pass of 4 and 5 one of 6.
  EXPECT_EQ(plan(6, 4, 64, 768, 3), (Plan{{4, 3}}));
  EXPECT_EQ(plan(6, 4, 64, 768, 5), (Plan{{6, 5}}));
  EXPECT_EQ(plan(6, 4, 64, 768, 4), (Plan{{4, 4}}));
  EXPECT_EQ(plan(6, 4, 64, 768, 1), (Plan{{1, 1}}));
  // 14 x 32: 9 rows as 8 and 1 (a pass of 14 would do 5 rows for nothing), 13 as 14.
  EXPECT_EQ(plan(14, 2, 64, 768, 9), (Plan{{8, 8}, {1, 1}}));
  EXPECT_EQ(plan(14, 2, 64, 768, 11), (Plan{{8, 8}, {4, 3}}));
  EXPECT_EQ(plan(14, 2, 64, 768, 13), (Plan{{14, 13}}));
  // B of a tile in L1 (kc = 64): passes cost only their multiply-adds, so none repeats a row.
  EXPECT_EQ(plan(6, 2, 32, 64, 5), (Plan{{4, 4}, {1, 1}}));
  EXPECT_EQ(plan(6, 2, 32, 64, 3), (Plan{{2, 2}, {1, 1}}));

  for (int64_t mr = 2; mr <= 30; ++mr)
    for (int64_t vectors : {1, 2, 4})
      for (int64_t kc : {16, 768})
        for (int64_t rows = 1; rows < mr; ++rows) {
          std::vector<EdgePass> passes = schedule::edge_passes(mr, vectors, 64, kc, rows);
          SCOPED_TRACE(fmt::format("mr {} vectors {} kc {} rows {}", mr, vectors, kc, rows));
          ASSERT_FALSE(passes.empty());
          int64_t covered = 0;
          for (size_t i = 0; i < passes.size(); ++i) {
            const EdgePass& p = passes[i];
            EXPECT_TRUE(p.height == mr ||
                        (std::has_single_bit(uint64_t(p.height)) && p.height < mr));
            if (i > 0) EXPECT_LT(p.height, passes[i - 1].height);
            EXPECT_GE(p.rows, 1);
            EXPECT_LE(p.rows, p.height);
            if (i + 1 < passes.size()) EXPECT_EQ(p.rows, p.height);
            covered += p.rows;
          }
          EXPECT_EQ(covered, rows);
        }
}
