// The search spaces: every sample and mutation is valid; the shape-generic space is
// not tied to divisors; the divisor space is.
#include "tune/search_space.h"

#include <gtest/gtest.h>

#include <set>

#include "codegen/llvm/target.h"
#include "ops/batch_matmul.h"
#include "ops/dense.h"
#include "test_support.h"
#include "tune/search.h"

namespace dietcode::tune {
namespace {

std::vector<std::vector<int64_t>> range(int64_t lo, int64_t hi) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t m = lo; m <= hi; ++m) out.push_back({m});
  return out;
}

TEST(SearchSpace, ShapeGenericSamplesAreValidAndNotDivisors) {
  te::Operator op = ops::dense(1, 128, 2304, 768);
  for (schedule::Isa isa : {schedule::Isa::Avx2, schedule::Isa::Avx512}) {
    SearchSpace space(op, isa, 2, range(1, 128), SpaceKind::ShapeGeneric);
    std::mt19937_64 rng(1);
    std::set<int64_t> mrs;
    int not_dividing_128 = 0;
    for (int i = 0; i < 2000; ++i) {
      schedule::MicroKernelSchedule s = space.sample(rng);
      EXPECT_NO_THROW(schedule::bind(s, op)) << schedule::to_json_text(s);
      EXPECT_EQ(s.isa, isa);
      mrs.insert(s.mr);
      if (128 % s.mr != 0) ++not_dividing_128;
      auto child = space.mutate(rng, s, i % 128);
      if (child) {
        EXPECT_NO_THROW(schedule::bind(*child, op)) << schedule::to_json_text(*child);
      }
    }
    EXPECT_GT(not_dividing_128, 300);  // 3, 5, 6, 7, 9 ... rows: tiles of no one shape
    EXPECT_GE(mrs.size(), 10u);
  }
}

TEST(SearchSpace, MutationMovesTowardTheChosenShape) {
  te::Operator op = ops::dense(1, 128, 2304, 768);
  SearchSpace space(op, schedule::Isa::Avx512, 1, range(1, 128), SpaceKind::ShapeGeneric);
  std::mt19937_64 rng(3);
  auto s = testing::make_schedule(schedule::Isa::Avx512, 8, 32, 256, 64, 256);
  s.pack_b = schedule::PackB::Prepacked;
  // Toward M = 7 (index 6): some mutation reaches a tile that covers 7 rows exactly.
  bool exact = false;
  for (int i = 0; i < 400 && !exact; ++i)
    if (auto c = space.mutate(rng, s, 6)) exact = pad_ratio(*c, space.extents()[6]) == 1.0;
  EXPECT_TRUE(exact);
}

TEST(SearchSpace, DivisorSpaceDividesTheShape) {
  te::Operator op = ops::dense(1, 128, 2304, 768);
  SearchSpace space(op, schedule::Isa::Avx512, 2, {{24}}, SpaceKind::Divisors);
  std::mt19937_64 rng(2);
  for (int i = 0; i < 500; ++i) {
    schedule::MicroKernelSchedule s = space.sample(rng);
    EXPECT_EQ(24 % s.mr, 0) << schedule::to_json_text(s);
    EXPECT_EQ(24 % s.mc, 0) << schedule::to_json_text(s);
    EXPECT_EQ(768 % s.kc, 0) << schedule::to_json_text(s);
    EXPECT_EQ(2304 % s.nr, 0) << schedule::to_json_text(s);
    EXPECT_EQ(2304 % s.nc, 0) << schedule::to_json_text(s);
    if (auto c = space.mutate(rng, s, 0)) {
      EXPECT_EQ(24 % c->mr, 0);
      EXPECT_EQ(24 % c->mc, 0);
      EXPECT_EQ(768 % c->kc, 0);
    }
  }
}

TEST(SearchSpace, DivisorSpaceKeepsDotProductTilesDividingN) {
  // Dot-product tiles (any count of columns) are in the divisor space only where their
  // columns divide N: Q K^T at T = 24 draws 1, 2, 3, 4, 6 and 8 columns, never 5 or 7.
  te::ShapeVar t = te::shape_var("T", 1, 128);
  te::Operator qk = ops::batch_matmul({t}, 12, t.var, t.var, 64, ops::Layout::NT);
  SearchSpace space(qk, schedule::Isa::Avx2, 1, {{24}}, SpaceKind::Divisors);
  std::mt19937_64 rng(3);
  std::set<int64_t> columns;
  for (int i = 0; i < 2000; ++i) {
    schedule::MicroKernelSchedule s = space.sample(rng);
    if (s.vector_axis != schedule::Axis::K) continue;
    EXPECT_EQ(24 % s.nr, 0) << schedule::to_json_text(s);
    EXPECT_EQ(24 % s.nc, 0) << schedule::to_json_text(s);
    columns.insert(s.nr);
  }
  EXPECT_GE(columns.size(), 4u);
}

TEST(SearchSpace, NoValidMicroKernelIsAClearError) {
  // batch_matmul with a changing B cannot pre-pack; N = 1 still admits a tile, so use an
  // operator whose K is fine but ask for an ISA the validator rejects.
  te::Operator op = ops::dense(1, 8, 64, 64);
  EXPECT_USER_ERROR(SearchSpace(op, schedule::Isa::Avx2, 1, {}, SpaceKind::ShapeGeneric),
                    "no shapes");
}

TEST(Search, ProposesNewValidCandidates) {
  te::Operator op = ops::dense(1, 32, 256, 128);
  SearchSpace space(op, schedule::Isa::Avx512, 1, range(1, 32), SpaceKind::ShapeGeneric);
  CostModel model(op, 1);  // untrained: f_MK is a constant, ranking falls to occ * pad
  SearchContext ctx{&space, &model, std::vector<double>(32, 1.0), 0, {}};
  SearchParams params;
  params.population = 128;
  std::mt19937_64 rng(4);
  ScheduleSet measured;
  auto first = propose_batch(ctx, params, {}, measured, 20, rng);
  ASSERT_EQ(first.size(), 20u);
  for (const auto& s : first) {
    EXPECT_NO_THROW(schedule::bind(s, op));
    EXPECT_TRUE(measured.insert(s).second) << "duplicate in a batch";
  }
  auto second = propose_batch(ctx, params, first, measured, 20, rng);
  for (const auto& s : second)
    EXPECT_FALSE(measured.count(s)) << "proposed a measured kernel again";
}

}  // namespace
}  // namespace dietcode::tune
