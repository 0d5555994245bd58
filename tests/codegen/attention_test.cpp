// Attention's batch_matmuls against the float64 reference, with the sequence length T
// on both sides of the product (Q K^T: M = N = T, NT; S V: M = K = T, NN), over T = 1,
// primes, sizes just off tile multiples and sizes past the declared range [1, 128].
// Covers B read in place (PackB::Direct, masked n tail), per-block packing, one-task
// parallel loops and Q K^T as tiles of dot products (vector_axis k); fresh random inputs,
// outputs poisoned with NaN.
#include <gtest/gtest.h>

#include <random>

#include "codegen/llvm/target.h"
#include "ops/batch_matmul.h"
#include "reference/check.h"
#include "schedule/random_schedule.h"
#include "support/error.h"

using namespace dietcode;

namespace {

const std::vector<int64_t> kSequenceLengths{1,  2,  3,  5,  7,  8,   13,  15,  16,  17,
                                            31, 32, 33, 37, 64, 100, 127, 128, 129, 200};
constexpr int kSchedules = 16;
constexpr double kTolerance = 1e-5;
constexpr int64_t kHeads = 3, kHeadSize = 64;

te::Operator attention_product(ops::Layout layout) {
  te::ShapeVar t = te::shape_var("T", 1, 128);
  return layout == ops::Layout::NT
             ? ops::batch_matmul({t}, kHeads, t.var, t.var, kHeadSize, ops::Layout::NT)
             : ops::batch_matmul({t}, kHeads, t.var, kHeadSize, t.var, ops::Layout::NN);
}

std::vector<schedule::Isa> isas() {
  std::vector<schedule::Isa> v{schedule::Isa::Avx2};
  if (codegen::host_supports(schedule::Isa::Avx512)) v.push_back(schedule::Isa::Avx512);
  return v;
}

void expect_matches_reference(const te::Operator& op,
                              const std::vector<schedule::MicroKernelSchedule>& schedules,
                              std::mt19937_64& rng) {
  std::vector<reference::CheckCase> cases;
  for (int64_t t : kSequenceLengths) cases.push_back(reference::make_check_case(op, {t}, rng));
  for (const schedule::MicroKernelSchedule& s : schedules) {
    runtime::Kernel kernel = runtime::Kernel::compile(op, s);
    for (const reference::CheckCase& c : cases)
      ASSERT_LE(reference::run_check_case(kernel, c), kTolerance)
          << op.name << " T=" << c.shape[0] << " schedule=" << schedule::to_json_text(s);
  }
}

TEST(Attention, ScoresQKtMatchReference) {
  te::Operator op = attention_product(ops::Layout::NT);
  for (schedule::Isa isa : isas()) {
    std::mt19937_64 rng(21 + static_cast<int>(isa));
    std::vector<schedule::MicroKernelSchedule> schedules;
    for (int i = 0; i < kSchedules; ++i)
      schedules.push_back(schedule::random_schedule(rng, isa, op));
    expect_matches_reference(op, schedules, rng);
  }
}

TEST(Attention, ContextSVWithBInPlaceMatchesReference) {
  te::Operator op = attention_product(ops::Layout::NN);
  for (schedule::Isa isa : isas()) {
    std::mt19937_64 rng(31 + static_cast<int>(isa));
    std::vector<schedule::MicroKernelSchedule> schedules;
    // Random schedules with B read in place (S V's B rows run along n), so the masked
    // n tail and the row stride are exercised by every tile shape the space draws.
    while (static_cast<int>(schedules.size()) < kSchedules) {
      schedule::MicroKernelSchedule s = schedule::random_schedule(rng, isa, op);
      s.pack_b = schedule::PackB::Direct;
      ASSERT_NO_THROW(schedule::bind(s, op)) << schedule::to_json_text(s);
      schedules.push_back(s);
    }
    // N = 64 is a whole number of vectors: a tile wider than the rest of N (here
    // 3 vectors, so N = 64 ends 1/3 into a tile) exercises whole masked-off vectors.
    schedule::MicroKernelSchedule wide;
    wide.isa = isa;
    wide.nr = 3 * schedule::vector_isa(isa).width;
    wide.mr = 2;
    wide.mc = 4;
    wide.nc = wide.nr;
    wide.kc = 16;
    wide.parallel = schedule::ParallelAxis::Batch;
    wide.pack_a = schedule::PackA::Direct;
    wide.pack_b = schedule::PackB::Direct;
    schedules.push_back(wide);
    expect_matches_reference(op, schedules, rng);
  }
}

TEST(Attention, DirectBNeedsRowsAlongN) {
  schedule::MicroKernelSchedule s;
  s.isa = schedule::Isa::Avx2;
  s.nr = 8;
  s.kc = 16;
  s.mc = 4;
  s.nc = 8;
  s.pack_b = schedule::PackB::Direct;
  EXPECT_NO_THROW(schedule::bind(s, attention_product(ops::Layout::NN)));
  try {
    schedule::bind(s, attention_product(ops::Layout::NT));
    FAIL() << "direct B accepted for a transposed B";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pack_b 'direct'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(schedule::schedule_from_json_text(schedule::to_json_text(s)), s);
  schedule::MicroKernelSchedule per_block = s;
  per_block.pack_b = schedule::PackB::PerBlock;
  EXPECT_NE(per_block.digest(), s.digest());
}

// Q K^T as dot products (a query row against a key row, both along k): accepted for NT,
// refused for NN (B's rows run along n there) and for packed operands, with the reason.
TEST(Attention, DotProductsNeedBothOperandsAlongK) {
  schedule::MicroKernelSchedule s;
  s.isa = schedule::Isa::Avx2;
  s.vector_axis = schedule::Axis::K;
  s.mr = 2;
  s.nr = 3;
  s.kc = 64;
  s.mc = 4;
  s.nc = 6;
  s.pack_a = schedule::PackA::Direct;
  s.pack_b = schedule::PackB::Direct;
  EXPECT_NO_THROW(schedule::bind(s, attention_product(ops::Layout::NT)));
  auto refusal = [](const schedule::MicroKernelSchedule& x, const te::Operator& op) {
    try {
      schedule::bind(x, op);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refusal(s, attention_product(ops::Layout::NN)).find("contiguous along k"),
            std::string::npos);
  schedule::MicroKernelSchedule packed = s;
  packed.pack_a = schedule::PackA::Packed;
  EXPECT_NE(refusal(packed, attention_product(ops::Layout::NT)).find("pack_a 'direct'"),
            std::string::npos);
  schedule::MicroKernelSchedule too_big = s;
  too_big.mr = 4;
  too_big.nr = 4;  // 16 accumulators + 5: more than AVX2's 16 registers
  too_big.mc = 4;
  too_big.nc = 4;
  EXPECT_NE(refusal(too_big, attention_product(ops::Layout::NT)).find("vector registers"),
            std::string::npos);
  // JSON: "vector_axis" written only for k, read back equal; its digest differs from the
  // outer-product schedule's, whose digest (and JSON) are those of schedules before it.
  const std::string text = schedule::to_json_text(s);
  EXPECT_NE(text.find("\"vector_axis\":\"k\""), std::string::npos) << text;
  EXPECT_EQ(schedule::schedule_from_json_text(text), s);
  schedule::MicroKernelSchedule outer;
  EXPECT_EQ(schedule::to_json_text(outer).find("vector_axis"), std::string::npos);
  schedule::MicroKernelSchedule outer_k = outer;
  outer_k.vector_axis = schedule::Axis::K;
  EXPECT_NE(outer_k.digest(), outer.digest());
  EXPECT_THROW(schedule::schedule_from_json_text(text.substr(0, text.size() - 1) +
                                                 ",\"vector_axis\":\"m\"}"),
               Error);
}

TEST(Attention, ScoresQKtAsDotProductsMatchReference) {
  te::Operator op = attention_product(ops::Layout::NT);
  for (schedule::Isa isa : isas()) {
    std::mt19937_64 rng(41 + static_cast<int>(isa));
    std::vector<schedule::MicroKernelSchedule> schedules;
    while (static_cast<int>(schedules.size()) < kSchedules) {
      schedule::MicroKernelSchedule s = schedule::random_schedule(rng, isa, op);
      if (s.vector_axis == schedule::Axis::K) schedules.push_back(s);
    }
    expect_matches_reference(op, schedules, rng);
  }
}

// Heads innermost (batch_loop 'inner'): S V with B in place and Q K^T as dot products,
// every random tile of each, parallel over none, m or n.
TEST(Attention, HeadsInnermostMatchReference) {
  for (ops::Layout layout : {ops::Layout::NN, ops::Layout::NT}) {
    te::Operator op = attention_product(layout);
    for (schedule::Isa isa : isas()) {
      std::mt19937_64 rng(51 + static_cast<int>(isa) + 7 * static_cast<int>(layout));
      std::vector<schedule::MicroKernelSchedule> schedules;
      const schedule::ParallelAxis parallel[] = {
          schedule::ParallelAxis::None, schedule::ParallelAxis::M, schedule::ParallelAxis::N};
      while (static_cast<int>(schedules.size()) < kSchedules / 2) {
        schedule::MicroKernelSchedule s = schedule::random_schedule(rng, isa, op);
        if (layout == ops::Layout::NT && s.vector_axis != schedule::Axis::K) continue;
        s.batch_inner = true;
        s.pack_a = schedule::PackA::Direct;
        s.pack_b = schedule::PackB::Direct;
        s.parallel = parallel[schedules.size() % 3];
        ASSERT_NO_THROW(schedule::bind(s, op)) << schedule::to_json_text(s);
        schedules.push_back(s);
      }
      expect_matches_reference(op, schedules, rng);
    }
  }
}

}  // namespace
