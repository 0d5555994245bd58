// Fused attention (ops/attention.h) as one generated kernel, against the float64
// reference: fresh random inputs for every T, outputs poisoned with NaN, T = 1, primes,
// lengths just off tile multiples and past the declared range, several random attention
// schedules (query tile, key block, unroll, parallel axis) per T, with and without a
// padding mask, a mask that leaves one key, scores of large magnitude, head sizes that
// the vector width does not divide, several threads; and every bad input refused clearly.
#include "ops/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "codegen/llvm/jit.h"
#include "codegen/llvm/target.h"
#include "lower/pipeline.h"
#include "ops/row_ops.h"
#include "reference/reference.h"
#include "runtime/kernel.h"
#include "runtime/thread_pool.h"
#include "schedule/attention_schedule.h"
#include "schedule/row_schedule.h"
#include "test_support.h"

using namespace dietcode;

namespace {

const std::vector<int64_t> kLengths{1,  2,  3,  7,   8,   9,   13,  16,  17, 31,
                                    63, 64, 65, 100, 127, 128, 129, 200, 512};
constexpr double kTolerance = 2e-6;

schedule::Isa host_isa() {
  return codegen::host_target().isa;
}

using Fill = std::function<float(std::mt19937_64&)>;

float normal(std::mt19937_64& rng) {
  return std::normal_distribution<float>(0.0f, 1.0f)(rng);
}

// Inputs of one T (mask last when the operator has one) and the float64 result.
struct Case {
  int64_t t;
  std::vector<std::vector<float>> inputs;
  std::vector<double> expected;
};

// Q, K, V from `fill`; the mask (if any) from `mask_fill(sequence, key, T)`.
Case make_case(const te::Operator& op, int64_t t, std::mt19937_64& rng, const Fill& fill = normal,
               const std::function<float(int64_t, int64_t, int64_t)>& mask_fill = nullptr) {
  Case c{t, {}, {}};
  std::vector<int64_t> sizes = op.buffer_sizes(op.bind({t}));
  std::vector<const float*> pointers;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    c.inputs.emplace_back(sizes[i]);
    bool mask = i == 3;
    for (int64_t e = 0; e < sizes[i]; ++e)
      c.inputs.back()[e] =
          mask ? (mask_fill ? mask_fill(e / t, e % t, t) : -3.0f * std::abs(fill(rng))) : fill(rng);
    pointers.push_back(c.inputs.back().data());
  }
  c.expected = reference::evaluate(op, {t}, pointers);
  return c;
}

double run_case(const runtime::Kernel& k, const Case& c) {
  std::vector<runtime::ConstTensor> args;
  for (const auto& in : c.inputs) args.push_back({in.data(), int64_t(in.size())});
  std::vector<float> out(c.expected.size(), std::numeric_limits<float>::quiet_NaN());
  k.run({c.t}, args, {out.data(), int64_t(out.size())});
  return reference::relative_error(out.data(), c.expected);
}

std::vector<std::pair<schedule::AttentionSchedule, runtime::Kernel>> random_kernels(
    const te::Operator& op, int count, std::mt19937_64& rng) {
  std::vector<std::pair<schedule::AttentionSchedule, runtime::Kernel>> out;
  for (int i = 0; i < count; ++i) {
    schedule::AttentionSchedule s = schedule::random_attention_schedule(rng, host_isa());
    out.emplace_back(s, runtime::Kernel::compile(op, s));
  }
  return out;
}

// Every kernel on every T of kLengths (fewer kernels past T = 200: the reference is slow).
void check_lengths(const te::Operator& op, uint64_t seed, const Fill& fill = normal,
                   double tolerance = kTolerance) {
  std::mt19937_64 rng(seed);
  auto kernels = random_kernels(op, 6, rng);
  double worst = 0;
  for (int64_t t : kLengths) {
    Case c = make_case(op, t, rng, fill);
    for (size_t i = 0; i < kernels.size(); ++i) {
      if (t > 200 && i >= 2) break;
      double err = run_case(kernels[i].second, c);
      worst = std::max(worst, std::isnan(err) ? 1.0 : err);
      EXPECT_LE(err, tolerance) << "T=" << t << " schedule=" << to_json_text(kernels[i].first);
    }
  }
  std::printf("[ measured ] worst relative error %.2e\n", worst);
}

}  // namespace

TEST(FusedAttention, MatchesFloat64OverLengthsAndSchedules) {
  check_lengths(ops::attention(1, 128, 3, ops::attention_shapes(1, 3, 64, false)), 1);
}

TEST(FusedAttention, PaddingMaskMatchesFloat64) {
  // Two sequences of two heads; the mask hides the padded keys of each sequence (-inf)
  // and biases the rest.
  te::Operator op = ops::attention(1, 128, 2, ops::attention_shapes(2, 2, 64, true));
  std::mt19937_64 rng(2);
  auto kernels = random_kernels(op, 6, rng);
  for (int64_t t : kLengths) {
    if (t > 200) continue;
    int64_t len0 = 1 + int64_t(rng() % uint64_t(t)), len1 = t;
    Case c = make_case(op, t, rng, normal, [&](int64_t seq, int64_t key, int64_t) {
      return key < (seq == 0 ? len0 : len1) ? -0.5f * float(key % 3)
                                            : -std::numeric_limits<float>::infinity();
    });
    for (const auto& [s, k] : kernels)
      EXPECT_LE(run_case(k, c), kTolerance)
          << "T=" << t << " len0=" << len0 << " " << to_json_text(s);
  }
}

TEST(FusedAttention, MaskLeavingOneKeySelectsItsValues) {
  te::Operator op = ops::attention(1, 256, 1, ops::attention_shapes(2, 1, 64, true));
  std::mt19937_64 rng(3);
  auto kernels = random_kernels(op, 6, rng);
  for (float hidden : {-std::numeric_limits<float>::infinity(), -1e30f}) {
    for (int64_t t : {1, 2, 9, 17, 64, 129, 200}) {
      int64_t keep0 = int64_t(rng() % uint64_t(t)), keep1 = t - 1;
      Case c = make_case(op, t, rng, normal, [&](int64_t seq, int64_t key, int64_t) {
        return key == (seq == 0 ? keep0 : keep1) ? 0.0f : hidden;
      });
      // Every query row of sequence s is V[s][keep_s] exactly (softmax of one key is 1).
      const std::vector<float>& v = c.inputs[2];
      for (int64_t i = 0; i < t; ++i)
        for (int64_t d = 0; d < 64; ++d) {
          ASSERT_EQ(c.expected[i * 64 + d], double(v[keep0 * 64 + d]));
          ASSERT_EQ(c.expected[(t + i) * 64 + d], double(v[(t + keep1) * 64 + d]));
        }
      for (const auto& [s, k] : kernels)
        EXPECT_LE(run_case(k, c), 1e-7)
            << "T=" << t << " hidden=" << hidden << " " << to_json_text(s);
    }
  }
}

TEST(FusedAttention, LargeScoresStayStable) {
  // Scores with a spread of about 1600: exp overflows (inf, then NaN) unless the running
  // maximum is subtracted. The tolerance is the problem's own conditioning, not the
  // kernel's: a float score near 1e3 is rounded by ~6e-5, which exp turns into a relative
  // change of the probabilities of that size (every schedule measures the same 1.7e-5).
  check_lengths(
      ops::attention(1, 128, 2, ops::attention_shapes(1, 2, 64, false)), 4,
      [](std::mt19937_64& rng) { return 40.0f * normal(rng); }, 1e-4);
}

TEST(FusedAttention, HeadSizesTheVectorWidthDoesNotDivide) {
  std::mt19937_64 rng(5);
  for (int64_t d : {1, 3, 13, 72, 100}) {
    te::Operator op = ops::attention(1, 64, 2, ops::attention_shapes(1, 2, d, true));
    auto kernels = random_kernels(op, 3, rng);
    for (int64_t t : {1, 5, 16, 33, 70}) {
      Case c = make_case(op, t, rng);
      for (const auto& [s, k] : kernels)
        EXPECT_LE(run_case(k, c), kTolerance) << "D=" << d << " T=" << t << " " << to_json_text(s);
    }
  }
}

TEST(FusedAttention, ParallelSchedulesOnSeveralThreads) {
  runtime::ThreadPool& pool = runtime::ThreadPool::global();
  int before = pool.num_threads();
  pool.set_num_threads(4);
  pool.set_serial_work(0);  // small T too goes through the pool
  te::Operator op = ops::attention(1, 128, 12, ops::attention_shapes(1, 12, 64, true));
  std::mt19937_64 rng(6);
  for (auto parallel :
       {schedule::AttentionParallel::Heads, schedule::AttentionParallel::HeadsAndQueryTiles}) {
    schedule::AttentionSchedule s = schedule::random_attention_schedule(rng, host_isa());
    s.parallel = parallel;
    runtime::Kernel k = runtime::Kernel::compile(op, s);
    for (int64_t t : {1, 37, 128}) {
      Case c = make_case(op, t, rng);
      for (int rep = 0; rep < 3; ++rep)
        EXPECT_LE(run_case(k, c), kTolerance) << "T=" << t << " " << to_json_text(s);
    }
  }
  pool.set_num_threads(before);
  pool.set_serial_work(runtime::ThreadPool::kSerialWork);
}

TEST(FusedAttention, PackedQkvLayoutMatchesFloat64) {
  // BERT's layout: Q, K, V read from the QKV projection's [batch, T, 3 x heads x D] output,
  // O written as [batch, T, heads x D]; two sequences with a padding mask, several threads.
  te::Operator op = ops::attention_packed_qkv(1, 128, 2, 3, 64, true);
  {
    std::mt19937_64 rng(10);
    auto kernels = random_kernels(op, 4, rng);
    for (int64_t t : {1, 2, 7, 16, 17, 64, 65, 129, 200}) {
      Case c = make_case(op, t, rng);
      for (const auto& [s, k] : kernels)
        EXPECT_LE(run_case(k, c), kTolerance) << "T=" << t << " " << to_json_text(s);
    }
  }
  EXPECT_EQ(ops::match_attention(op).heads, 3);
  EXPECT_EQ(ops::match_attention(op).slices, 6);
  EXPECT_TRUE(ops::match_attention(op).packed_qkv);
  // The same numbers as the separate layout on the same values.
  te::Operator separate = ops::attention(1, 128, 3, ops::attention_shapes(2, 3, 64, true));
  std::mt19937_64 rng(11);
  for (int64_t t : {1, 5, 33}) {
    Case c = make_case(op, t, rng);
    std::vector<float> q(6 * t * 64), k(q.size()), v(q.size());
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t h = 0; h < 3; ++h)
        for (int64_t i = 0; i < t; ++i)
          for (int64_t d = 0; d < 64; ++d) {
            const float* row = &c.inputs[0][(n * t + i) * 3 * 192];
            int64_t at = ((n * 3 + h) * t + i) * 64 + d;
            q[at] = row[h * 64 + d];
            k[at] = row[192 + h * 64 + d];
            v[at] = row[384 + h * 64 + d];
          }
    std::vector<double> want =
        reference::evaluate(separate, {t}, {q.data(), k.data(), v.data(), c.inputs[1].data()});
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t h = 0; h < 3; ++h)
        for (int64_t i = 0; i < t; ++i)
          for (int64_t d = 0; d < 64; ++d)
            ASSERT_NEAR(c.expected[(n * t + i) * 192 + h * 64 + d],
                        want[((n * 3 + h) * t + i) * 64 + d], 1e-12);
  }
  runtime::ThreadPool& pool = runtime::ThreadPool::global();
  int before = pool.num_threads();
  pool.set_num_threads(3);
  pool.set_serial_work(0);
  for (auto parallel :
       {schedule::AttentionParallel::Heads, schedule::AttentionParallel::HeadsAndQueryTiles}) {
    schedule::AttentionSchedule s = schedule::random_attention_schedule(rng, host_isa());
    s.parallel = parallel;
    runtime::Kernel k = runtime::Kernel::compile(op, s);
    for (int64_t t : {1, 17, 128}) EXPECT_LE(run_case(k, make_case(op, t, rng)), kTolerance);
  }
  pool.set_num_threads(before);
  pool.set_serial_work(runtime::ThreadPool::kSerialWork);
  EXPECT_USER_ERROR(ops::attention_packed_qkv(1, 128, 1, 0, 64, false), "heads 0");
  EXPECT_USER_ERROR(ops::attention_packed_qkv(1, 128, 1, 12, 2048, false), "head size 2048");
  EXPECT_USER_ERROR(ops::attention_packed_qkv(0, 128, 1, 12, 64, false), "range of T [0, 128]");
}

// The head dimension in the lanes (short sequences): every unroll and key blocks of one
// key to past T, query tiles of one row to several, on the separate layout with a padding
// mask (and a mask leaving one key), the packed QKV layout on three threads, and head sizes
// the vector width does not divide; T = 1, primes, and past the declared range.
TEST(FusedAttention, HeadDimLanesMatchFloat64) {
  std::mt19937_64 rng(12);
  std::vector<std::pair<schedule::AttentionSchedule, runtime::Kernel>> kernels;
  auto compile_all = [&](const te::Operator& op) {
    kernels.clear();
    int i = 0;
    for (int64_t unroll = 1; unroll <= schedule::kMaxHeadDimUnroll; ++unroll)
      for (int64_t block : {1, 3, 16, 64}) {
        schedule::AttentionSchedule s;
        s.isa = host_isa();
        s.lanes = schedule::AttentionLanes::HeadDim;
        s.unroll = unroll;
        s.key_block = block;
        s.query_tile = std::vector<int64_t>{1, 5, 16}[i % 3];
        s.parallel = static_cast<schedule::AttentionParallel>(i++ % 3);
        kernels.emplace_back(s, runtime::Kernel::compile(op, s));
      }
  };
  te::Operator masked = ops::attention(1, 128, 2, ops::attention_shapes(2, 2, 64, true));
  compile_all(masked);
  for (int64_t t : {1, 2, 3, 7, 8, 9, 13, 17, 64, 129, 200}) {
    int64_t len0 = 1 + int64_t(rng() % uint64_t(t));
    Case padded = make_case(masked, t, rng, normal, [&](int64_t seq, int64_t key, int64_t) {
      return key < (seq == 0 ? len0 : t) ? -0.5f * float(key % 3)
                                         : -std::numeric_limits<float>::infinity();
    });
    int64_t keep = int64_t(rng() % uint64_t(t));
    Case one_key = make_case(masked, t, rng, normal, [&](int64_t, int64_t key, int64_t) {
      return key == keep ? 0.0f : -std::numeric_limits<float>::infinity();
    });
    for (const auto& [s, k] : kernels) {
      EXPECT_LE(run_case(k, padded), kTolerance) << "T=" << t << " " << to_json_text(s);
      EXPECT_LE(run_case(k, one_key), 1e-7) << "T=" << t << " one key " << to_json_text(s);
    }
  }
  runtime::ThreadPool& pool = runtime::ThreadPool::global();
  const int before = pool.num_threads();
  pool.set_num_threads(3);
  pool.set_serial_work(0);
  te::Operator packed = ops::attention_packed_qkv(1, 128, 2, 3, 64, true);
  compile_all(packed);
  for (int64_t t : {1, 5, 31, 128}) {
    Case c = make_case(packed, t, rng);
    for (const auto& [s, k] : kernels)
      EXPECT_LE(run_case(k, c), kTolerance) << "packed T=" << t << " " << to_json_text(s);
  }
  pool.set_num_threads(before);
  pool.set_serial_work(runtime::ThreadPool::kSerialWork);
  for (int64_t d : {1, 13, 100}) {
    te::Operator op = ops::attention(1, 64, 2, ops::attention_shapes(1, 2, d, false));
    compile_all(op);
    for (int64_t t : {1, 6, 33}) {
      Case c = make_case(op, t, rng);
      for (const auto& [s, k] : kernels)
        EXPECT_LE(run_case(k, c), kTolerance) << "D=" << d << " T=" << t << " " << to_json_text(s);
    }
  }
  // Nothing packed: Q is read in place.
  EXPECT_EQ(kernels.front().second.loop_ir().find("pack"), std::string::npos)
      << kernels.front().second.loop_ir();
}

TEST(FusedAttention, KernelNeverStoresTheScores) {
  // The loop IR after lowering has one attention kernel per query tile and no loop over
  // a T x T buffer; the kernel reports its kind.
  schedule::AttentionSchedule s;
  s.isa = host_isa();
  s.parallel = schedule::AttentionParallel::HeadsAndQueryTiles;
  runtime::Kernel k = runtime::Kernel::compile(
      ops::attention(1, 128, 12, ops::attention_shapes(1, 12, 64, false)), s);
  EXPECT_TRUE(k.is_attention_kernel());
  EXPECT_EQ(k.attention_schedule(), s);
  std::string ir = k.loop_ir();
  std::string lowered = ir.substr(ir.find("after build_attention_loops"));
  EXPECT_NE(lowered.find("attention_kernel<"), std::string::npos) << lowered;
  EXPECT_EQ(lowered.find("scores["), std::string::npos) << lowered;
  EXPECT_NE(lowered.find("parallel"), std::string::npos) << lowered;
}

TEST(FusedAttention, ScheduleIsTypedData) {
  schedule::AttentionSchedule a;
  a.query_tile = 12;
  a.key_block = 17;
  a.unroll = 3;
  a.parallel = schedule::AttentionParallel::HeadsAndQueryTiles;
  std::string text = schedule::to_json_text(a);
  EXPECT_NE(text.find(R"("kind":"attention")"), std::string::npos) << text;
  schedule::AttentionSchedule b = schedule::attention_schedule_from_json_text(text);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.digest(), b.digest());
  b.key_block = 16;
  EXPECT_NE(a.digest(), b.digest());
  // The tag keeps a digest apart from another kind's with the same numbers.
  schedule::RowSchedule r;
  EXPECT_NE(schedule::AttentionSchedule{}.digest(), r.digest());
  EXPECT_USER_ERROR(schedule::attention_schedule_from_json_text(R"({"kind":"attention"})"),
                    "missing field");
  EXPECT_USER_ERROR(schedule::attention_schedule_from_json_text(
                        R"({"kind":"row","target":"cpu","isa":"avx2","query_tile":8,)"
                        R"("key_block":8,"unroll":2,"parallel":"heads"})"),
                    "kind 'row' is not 'attention'");
  EXPECT_USER_ERROR(schedule::attention_schedule_from_json_text(
                        R"({"kind":"attention","target":"cpu","isa":"avx2","query_tile":8,)"
                        R"("key_block":8,"unroll":2,"parallel":"rows"})"),
                    "parallel 'rows'");
  // lanes: absent means queries (earlier files and digests unchanged); head_dim round-trips,
  // changes the digest, and allows at most 4 keys at once.
  EXPECT_EQ(text.find("lanes"), std::string::npos) << text;
  schedule::AttentionSchedule d = a;
  d.lanes = schedule::AttentionLanes::HeadDim;
  std::string d_text = schedule::to_json_text(d);
  EXPECT_NE(d_text.find(R"("lanes":"head_dim")"), std::string::npos) << d_text;
  EXPECT_EQ(schedule::attention_schedule_from_json_text(d_text), d);
  EXPECT_NE(d.digest(), a.digest());
  EXPECT_USER_ERROR(schedule::attention_schedule_from_json_text(
                        R"({"kind":"attention","target":"cpu","isa":"avx2","query_tile":8,)"
                        R"("key_block":8,"unroll":2,"parallel":"heads","lanes":"rows"})"),
                    "lanes 'rows'; expected queries or head_dim");
  d.unroll = 5;
  EXPECT_USER_ERROR(schedule::validate(d), "unroll = 5 with lanes head_dim");
  a.unroll = 9;
  EXPECT_USER_ERROR(schedule::validate(a), "unroll = 9");
  a.unroll = 4;
  a.query_tile = 32;  // 4 row vectors x (4 + 1) > 16 AVX2 registers
  a.isa = schedule::Isa::Avx2;
  EXPECT_USER_ERROR(schedule::validate(a), "vector registers");
  a.query_tile = 0;
  EXPECT_USER_ERROR(schedule::validate(a), "query_tile = 0");
  // Every draw is valid.
  std::mt19937_64 rng(8);
  for (int i = 0; i < 500; ++i)
    for (schedule::Isa isa : {schedule::Isa::Avx2, schedule::Isa::Avx512})
      schedule::validate(schedule::random_attention_schedule(rng, isa));
}

TEST(FusedAttention, BadInputIsRefusedClearly) {
  using ops::kT;
  auto shapes = [](std::vector<int64_t> q, std::vector<int64_t> k, std::vector<int64_t> v,
                   std::vector<int64_t> mask = {}) {
    return ops::AttentionShapes{std::move(q), std::move(k), std::move(v), std::move(mask)};
  };
  EXPECT_USER_ERROR(ops::attention(1, 128, 12, shapes({12, kT, 64}, {24, kT, 64}, {12, kT, 64})),
                    "input K has 24 batch x heads slices in [24, T, 64], but Q has 12");
  EXPECT_USER_ERROR(ops::attention(1, 128, 12, shapes({12, kT, 64}, {12, kT, 64}, {6, kT, 64})),
                    "input V has 6 batch x heads slices");
  EXPECT_USER_ERROR(ops::attention(1, 128, 12, shapes({12, kT, 64}, {12, kT, 32}, {12, kT, 64})),
                    "input K has head size 32 in [12, T, 32], but Q has 64");
  EXPECT_USER_ERROR(ops::attention(1, 128, 12, shapes({12, kT, 64}, {12, kT, 64}, {12, kT, 63})),
                    "input V has head size 63");
  EXPECT_USER_ERROR(ops::attention(1, 128, 12, shapes({12, kT, 64}, {12, 100, 64}, {12, kT, 64})),
                    "input K has sequence length 100 in [12, 100, 64]; expected T");
  EXPECT_USER_ERROR(ops::attention(1, 128, 12, shapes({12, 64}, {12, kT, 64}, {12, kT, 64})),
                    "input Q has shape [12, 64]; expected [batch x heads, T, head size]");
  EXPECT_USER_ERROR(
      ops::attention(1, 128, 12, shapes({24, kT, 64}, {24, kT, 64}, {24, kT, 64}, {2, 100})),
      "input mask has shape [2, 100]; expected [batch, T] = [2, T]");
  EXPECT_USER_ERROR(
      ops::attention(1, 128, 12, shapes({24, kT, 64}, {24, kT, 64}, {24, kT, 64}, {3, kT})),
      "input mask has shape [3, T]; expected [batch, T] = [2, T]");
  EXPECT_USER_ERROR(ops::attention(1, 128, 5, ops::attention_shapes(1, 12, 64, false)),
                    "5 heads do not divide Q's 12");
  EXPECT_USER_ERROR(ops::attention(0, 128, 12, ops::attention_shapes(1, 12, 64, false)),
                    "range of T [0, 128]");
  EXPECT_USER_ERROR(ops::attention(1, 128, 1, ops::attention_shapes(1, 1, 2048, false)),
                    "head size 2048; expected at most 1024");
  EXPECT_USER_ERROR(ops::attention(1, 128, 1, ops::attention_shapes(1, 1, 64, false), -1.0),
                    "scale -1");

  // At run time: T = 0, buffers of the wrong size.
  te::Operator op = ops::attention(1, 128, 2, ops::attention_shapes(1, 2, 8, true));
  schedule::AttentionSchedule s;
  s.isa = host_isa();
  runtime::Kernel k = runtime::Kernel::compile(op, s);
  std::vector<float> q(2 * 5 * 8), m(5), out(2 * 5 * 8), short_mask(4);
  EXPECT_USER_ERROR(
      k.run({0}, {{q.data(), 0}, {q.data(), 0}, {q.data(), 0}, {m.data(), 0}}, {out.data(), 0}),
      "T = 0 is not a valid extent");
  EXPECT_USER_ERROR(
      k.run({5}, {{q.data(), 80}, {q.data(), 80}, {q.data(), 80}, {short_mask.data(), 4}},
            {out.data(), 80}),
      "buffer mask has 4 elements, expected 5");
  EXPECT_USER_ERROR(
      k.run({5}, {{q.data(), 80}, {q.data(), 72}, {q.data(), 80}, {m.data(), 5}}, {out.data(), 80}),
      "buffer K has 72 elements, expected 80");

  // Schedules meet operators of their own kind only.
  EXPECT_USER_ERROR(runtime::Kernel::compile(ops::softmax(1, 8, {ops::kM, 8}), s),
                    "not attention in the form ops::attention declares");
  schedule::RowSchedule row;
  row.isa = host_isa();
  EXPECT_USER_ERROR(runtime::Kernel::compile(op, row), "not a row operator");
}

TEST(FusedAttention, Avx512CodeIsGeneratedOnAnyHost) {
  // The AVX-512 kernel (16 lanes: query tiles of up to four vectors, Q^T packs 16 to 64
  // wide) compiles to assembly with 512-bit FMAs on any host; running it needs one.
  te::Operator op = ops::attention(1, 128, 2, ops::attention_shapes(1, 2, 72, true));
  std::mt19937_64 rng(9);
  for (int i = 0; i < 4; ++i) {
    schedule::AttentionSchedule s = schedule::random_attention_schedule(rng, schedule::Isa::Avx512);
    std::string text = codegen::assembly_text(lower::lower(schedule::bind(s, op)),
                                              codegen::target_for_isa(schedule::Isa::Avx512));
    EXPECT_NE(text.find("zmm"), std::string::npos) << to_json_text(s);
    EXPECT_NE(text.find("vfmadd"), std::string::npos) << to_json_text(s);
  }
}
