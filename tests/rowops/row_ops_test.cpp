// Row operators (add, GELU, softmax, LayerNorm, add + LayerNorm) generated from their
// tensor expressions, against the float64 reference: fresh random inputs, outputs
// poisoned with NaN, M inside and outside the declared range, row lengths 1, primes
// and non-multiples of the vector width, random row schedules.
#include "ops/row_ops.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "codegen/llvm/target.h"
#include "ops/dense.h"
#include "reference/reference.h"
#include "runtime/kernel.h"
#include "schedule/row_schedule.h"
#include "test_support.h"

using namespace dietcode;

namespace {

using Fill = std::function<float(std::mt19937_64&)>;

float normal(std::mt19937_64& rng) {
  return std::normal_distribution<float>(0.0f, 1.0f)(rng);
}

// Runs the kernel on shape {m} and returns the relative (Frobenius) error against
// float64; NaN if an output is not finite (an unwritten element stays NaN).
double run_and_compare(const runtime::Kernel& k, int64_t m, std::mt19937_64& rng,
                       const Fill& fill = normal) {
  const te::Operator& op = k.op();
  std::vector<int64_t> sizes = op.buffer_sizes(op.bind({m}));
  std::vector<std::vector<float>> inputs;
  std::vector<runtime::ConstTensor> args;
  std::vector<const float*> pointers;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    inputs.emplace_back(sizes[i]);
    for (float& v : inputs.back()) v = fill(rng);
  }
  for (const auto& in : inputs) {
    args.push_back({in.data(), int64_t(in.size())});
    pointers.push_back(in.data());
  }
  std::vector<float> out(sizes.back(), std::numeric_limits<float>::quiet_NaN());
  k.run({m}, args, {out.data(), int64_t(out.size())});
  return reference::relative_error(out.data(), reference::evaluate(op, {m}, pointers));
}

schedule::Isa host_isa() {
  return codegen::host_target().isa;
}

struct Case {
  const char* name;
  std::function<te::Operator(int64_t n)> build;
  double tolerance;
};

std::vector<Case> cases() {
  using ops::kM;
  return {
      {"add",
       [](int64_t n) {
         return ops::add(1, 128, {kM, n}, {kM, n});
       },
       1e-7},
      {"add_bias",
       [](int64_t n) {
         return ops::add(1, 128, {kM, n}, {n});
       },
       1e-7},
      {"add_column",
       [](int64_t n) {
         return ops::add(1, 128, {kM, 1}, {1, n});
       },
       1e-7},
      {"gelu",
       [](int64_t n) {
         return ops::gelu(1, 128, {kM, n});
       },
       1e-6},
      {"gelu_tanh",
       [](int64_t n) {
         return ops::gelu_tanh(1, 128, {kM, n});
       },
       1e-6},
      {"softmax",
       [](int64_t n) {
         return ops::softmax(1, 128, {kM, n});
       },
       1e-6},
      {"layer_norm", [](int64_t n) { return ops::layer_norm(1, 128, n); }, 2e-6},
      // X + R is rounded to float before it is normalized (the reference adds in float64);
      // on short rows whose two sums nearly agree, that rounding is amplified by
      // |X + R| / std (N = 2: up to ~1e-5).
      {"add_layer_norm", [](int64_t n) { return ops::add_layer_norm(1, 128, n); }, 1e-4},
  };
}

const std::vector<int64_t> kRowLengths{1, 2, 7, 8, 13, 17, 31, 64, 97, 768};
const std::vector<int64_t> kRows{1, 2, 3, 5, 17, 64, 127, 128, 129, 1000};

}  // namespace

TEST(RowOps, EveryOperatorMatchesFloat64) {
  std::mt19937_64 rng(7);
  for (const Case& c : cases()) {
    double worst = 0;
    for (int64_t n : kRowLengths) {
      te::Operator op = c.build(n);
      for (int draw = 0; draw < 2; ++draw) {
        schedule::RowSchedule s = schedule::random_row_schedule(rng, host_isa());
        runtime::Kernel k = runtime::Kernel::compile(op, s);
        for (int64_t m : kRows) {
          if (m * n > 200000) continue;  // the reference is slow; 1000 x 97 still runs
          double err = run_and_compare(k, m, rng);
          worst = std::max(worst, std::isnan(err) ? 1.0 : err);
          EXPECT_LE(err, c.tolerance)
              << c.name << " N=" << n << " M=" << m << " schedule=" << schedule::to_json_text(s);
        }
      }
    }
    std::printf("[ measured ] %-15s worst relative error %.2e\n", c.name, worst);
  }
}

TEST(RowOps, SoftmaxWithSymbolicRowLength) {
  // Attention scores: 3 heads x T rows of length T, T symbolic.
  std::mt19937_64 rng(11);
  te::Operator op = ops::softmax(1, 128, {3, ops::kM, ops::kM});
  for (int draw = 0; draw < 3; ++draw) {
    schedule::RowSchedule s = schedule::random_row_schedule(rng, host_isa());
    runtime::Kernel k = runtime::Kernel::compile(op, s);
    for (int64_t t : {1, 2, 7, 8, 9, 16, 17, 31, 64, 127, 128, 129, 200})
      EXPECT_LE(run_and_compare(k, t, rng), 1e-6) << "T=" << t << " " << schedule::to_json_text(s);
  }
}

TEST(RowOps, InterleavedRowsMatchFloat64) {
  // Groups of 2..8 rows computed together: row counts that leave a remainder in the group
  // and in the task, tasks shorter than a group, and rows of several axes (softmax over
  // heads x T x T, whose row axes differ inside a group).
  std::mt19937_64 rng(13);
  for (const Case& c : cases()) {
    for (int64_t n : {1, 17, 64}) {
      te::Operator op = c.build(n);
      for (auto [interleave, per_task] :
           {std::pair<int64_t, int64_t>{2, 3}, {3, 8}, {4, 4}, {4, 16}, {8, 5}, {8, 32}}) {
        schedule::RowSchedule s;
        s.isa = host_isa();
        s.interleave = interleave;
        s.rows_per_task = per_task;
        s.unroll = 2;
        s.parallel = per_task % 2 == 0;
        runtime::Kernel k = runtime::Kernel::compile(op, s);
        for (int64_t m : {1, 2, 3, 5, 17, 127, 129})
          EXPECT_LE(run_and_compare(k, m, rng), c.tolerance)
              << c.name << " N=" << n << " M=" << m << " " << schedule::to_json_text(s);
      }
    }
  }
  te::Operator scores = ops::softmax(1, 128, {3, ops::kM, ops::kM});
  schedule::RowSchedule s;
  s.isa = host_isa();
  s.interleave = 4;
  s.rows_per_task = 6;
  runtime::Kernel k = runtime::Kernel::compile(scores, s);
  EXPECT_NE(k.loop_ir().find("row in [task*6 + group*4, task*6 + group*4 + 4)"), std::string::npos)
      << k.loop_ir();
  for (int64_t t : {1, 2, 5, 16, 17, 127, 130})
    EXPECT_LE(run_and_compare(k, t, rng), 1e-6) << "T=" << t;
}

TEST(RowOps, SoftmaxOnExtremeRows) {
  std::mt19937_64 rng(3);
  schedule::RowSchedule s;
  s.isa = host_isa();
  for (int64_t n : {1, 5, 16, 33, 768}) {
    runtime::Kernel k = runtime::Kernel::compile(ops::softmax(1, 64, {ops::kM, n}), s);
    // Large positive and negative values: exp(x - max) never overflows.
    EXPECT_LE(run_and_compare(k, 7, rng, [](std::mt19937_64& r) { return 300.0f * normal(r); }),
              1e-6)
        << "N=" << n;
    EXPECT_LE(run_and_compare(k, 7, rng, [](std::mt19937_64& r) { return 1e4f + normal(r); }), 1e-6)
        << "N=" << n;
    EXPECT_LE(run_and_compare(k, 7, rng, [](std::mt19937_64& r) { return -1e4f + normal(r); }),
              1e-6)
        << "N=" << n;
  }
}

TEST(RowOps, LayerNormOnHugeAndTinyVariance) {
  std::mt19937_64 rng(5);
  schedule::RowSchedule s;
  s.isa = host_isa();
  for (int64_t n : {1, 3, 17, 768}) {
    runtime::Kernel k = runtime::Kernel::compile(ops::layer_norm(1, 128, n), s);
    EXPECT_LE(run_and_compare(k, 9, rng, [](std::mt19937_64& r) { return 1e4f * normal(r); }), 1e-6)
        << "huge variance, N=" << n;
    EXPECT_LE(run_and_compare(k, 9, rng, [](std::mt19937_64& r) { return 1e-4f * normal(r); }),
              1e-6)
        << "tiny variance (below eps), N=" << n;
    // A large offset: float32 rounding of the mean is amplified by |mean| / std.
    EXPECT_LE(run_and_compare(k, 9, rng, [](std::mt19937_64& r) { return 100.0f + normal(r); }),
              2e-5)
        << "offset rows, N=" << n;
  }
}

TEST(RowOps, ExpPolynomialAccuracy) {
  // Y = exp(X), X on a grid over the clamp range.
  te::ShapeVar m = te::shape_var("M", 1, 1 << 20);
  te::Input x = te::input("X", {m.var});
  te::ComputeOp y = te::compute("Y", {m.var}, {"j"}, [&](const std::vector<ir::Var>& ax) {
    return ir::call(ir::CallOp::Exp, {ir::load(x.tensor, {ax[0]})});
  });
  te::Operator op{"exp", {m}, {x}, y, {}};
  schedule::RowSchedule s;
  s.isa = host_isa();
  runtime::Kernel k = runtime::Kernel::compile(op, s);
  const int64_t count = 1 << 20;
  std::vector<float> in(count), out(count, std::nanf(""));
  for (int64_t i = 0; i < count; ++i) in[i] = float(-87.0 + 175.7 * double(i) / double(count));
  k.run({count}, {{in.data(), count}}, {out.data(), count});
  double worst = 0;
  for (int64_t i = 0; i < count; ++i) {
    double want = std::exp(double(in[i]));
    worst = std::max(worst, std::abs(double(out[i]) - want) / want);
  }
  std::printf("[ measured ] exp max relative error %.2e over [-87, 88.7]\n", worst);
  EXPECT_LE(worst, 3e-7);
  // Outside the range: 0 below, infinity above, NaN through.
  // Also: a NaN with payload bits where the exponent trick adds n; the last finite
  // input below ln(FLT_MAX) and the first above it.
  std::vector<float> special{-1e3f,
                             -88.f,
                             89.f,
                             1e3f,
                             INFINITY,
                             -INFINITY,
                             std::nanf(""),
                             std::bit_cast<float>(0xffc001ffu),
                             88.72283172607422f,
                             88.72283935546875f};
  std::vector<float> got(special.size());
  k.run({int64_t(special.size())}, {{special.data(), int64_t(special.size())}},
        {got.data(), int64_t(got.size())});
  EXPECT_EQ(got[0], 0.0f);
  EXPECT_EQ(got[1], 0.0f);
  EXPECT_EQ(got[2], INFINITY);
  EXPECT_EQ(got[3], INFINITY);
  EXPECT_EQ(got[4], INFINITY);
  EXPECT_EQ(got[5], 0.0f);
  EXPECT_TRUE(std::isnan(got[6]));
  EXPECT_TRUE(std::isnan(got[7]));
  EXPECT_TRUE(std::isfinite(got[8]) && got[8] > 3.4e38f) << got[8];
  EXPECT_EQ(got[9], INFINITY);
}

TEST(RowOps, ScheduleIsTypedData) {
  schedule::RowSchedule a;
  a.rows_per_task = 8;
  a.unroll = 3;
  a.parallel = false;
  a.passes = schedule::ReductionPasses::Separate;
  schedule::RowSchedule b = schedule::row_schedule_from_json_text(schedule::to_json_text(a));
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.digest(), b.digest());
  b.unroll = 2;
  EXPECT_NE(a.digest(), b.digest());
  EXPECT_USER_ERROR(schedule::row_schedule_from_json_text(R"({"kind":"row"})"), "missing field");
  a.unroll = 9;
  EXPECT_USER_ERROR(schedule::validate(a), "unroll = 9");
  // interleave: in the JSON and the digest; a schedule written before it means 1.
  a.unroll = 3;
  a.interleave = 4;
  b = schedule::row_schedule_from_json_text(schedule::to_json_text(a));
  EXPECT_EQ(b.interleave, 4);
  EXPECT_EQ(a, b);
  a.interleave = 1;
  EXPECT_NE(a.digest(), b.digest());
  EXPECT_EQ(schedule::row_schedule_from_json_text(
                R"({"kind":"row","target":"cpu","isa":"avx2","rows_per_task":4,"unroll":2,)"
                R"("parallel":true,"passes":"fused"})")
                .interleave,
            1);
  a.interleave = 9;
  EXPECT_USER_ERROR(schedule::validate(a), "interleave = 9");
}

TEST(RowOps, FusedPassesShareASweep) {
  // LayerNorm's variance reads the mean: two passes however the schedule asks; the
  // kernel's loop IR says so.
  schedule::RowSchedule s;
  s.isa = host_isa();
  runtime::Kernel k = runtime::Kernel::compile(ops::layer_norm(1, 8, 32), s);
  EXPECT_NE(k.loop_ir().find("pass 1: rstd"), std::string::npos) << k.loop_ir();
  EXPECT_TRUE(k.is_row_kernel());
  // Softmax's output is its sum's element times 1/sum: computed once, in the sum's pass.
  runtime::Kernel sm = runtime::Kernel::compile(ops::softmax(1, 8, {ops::kM, 32}), s);
  EXPECT_NE(sm.loop_ir().find("also stores the summed elements of inv_sum"), std::string::npos)
      << sm.loop_ir();
}

TEST(RowOps, BadInputIsRefusedClearly) {
  using ops::kM;
  EXPECT_USER_ERROR(ops::add(1, 128, {kM, 768}, {3072}), "does not broadcast");
  EXPECT_USER_ERROR(ops::add(1, 128, {kM, 0}, {1}), "input A has dimension 0");
  EXPECT_USER_ERROR(ops::layer_norm(1, 128, 768, 0.0), "eps = 0");
  EXPECT_USER_ERROR(ops::layer_norm(1, 128, 768, -1e-5), "expected a positive");
  EXPECT_USER_ERROR(ops::softmax(0, 128, {kM, 8}), "lower bound 0");
  schedule::RowSchedule s;
  s.isa = host_isa();
  EXPECT_USER_ERROR(runtime::Kernel::compile(ops::dense(1, 8, 16, 16), s), "not a row operator");
  runtime::Kernel k = runtime::Kernel::compile(ops::layer_norm(1, 128, 8), s);
  std::vector<float> x(16), g(8), b(7), y(16);
  EXPECT_USER_ERROR(k.run({2}, {{x.data(), 16}, {g.data(), 8}, {b.data(), 7}}, {y.data(), 16}),
                    "buffer beta has 7 elements, expected 8");
}
