// Bad input at every user-facing entry point gets a dietcode::Error that names the
// input and what was expected; nothing crashes and nothing computes silently wrong.
#include <gtest/gtest.h>

#include <random>

#include "codegen/llvm/target.h"
#include "ops/batch_matmul.h"
#include "ops/contraction.h"
#include "ops/dense.h"
#include "reference/check.h"
#include "runtime/kernel.h"
#include "support/parse.h"
#include "test_support.h"

using namespace dietcode;

namespace {

schedule::MicroKernelSchedule small_schedule() {
  return dietcode::testing::make_schedule(schedule::Isa::Avx2, 2, 8, 8, 4, 16);
}

struct Fixture {
  te::Operator op = ops::dense(1, 16, 24, 10);
  runtime::Kernel kernel = runtime::Kernel::compile(op, small_schedule());
  runtime::AlignedBuffer x{5 * 10}, w{24 * 10}, y{5 * 24};
};

}  // namespace

TEST(Errors, MismatchedBufferSizes) {
  Fixture f;
  EXPECT_USER_ERROR(
      f.kernel.run({5}, {{f.x.data(), 49}, {f.w.data(), f.w.size()}}, {f.y.data(), f.y.size()}),
      "buffer X has 49 elements, expected 50");
  EXPECT_USER_ERROR(
      f.kernel.run({5}, {{f.x.data(), f.x.size()}, {f.w.data(), f.w.size()}}, {f.y.data(), 7}),
      "buffer Y has 7 elements, expected 120");
  EXPECT_USER_ERROR(f.kernel.run({5}, {{f.x.data(), f.x.size()}}, {f.y.data(), f.y.size()}),
                    "got 1 input buffers, expected 2");
}

TEST(Errors, NullPointers) {
  Fixture f;
  EXPECT_USER_ERROR(
      f.kernel.run({5}, {{nullptr, 50}, {f.w.data(), f.w.size()}}, {f.y.data(), f.y.size()}),
      "buffer X is a null pointer");
}

TEST(Errors, ZeroOrNegativeExtents) {
  Fixture f;
  EXPECT_USER_ERROR(f.kernel.run({0}, {{f.x.data(), 0}, {f.w.data(), f.w.size()}}, {f.y.data(), 0}),
                    "M = 0 is not a valid extent");
  EXPECT_USER_ERROR(
      f.kernel.run({-3}, {{f.x.data(), 0}, {f.w.data(), f.w.size()}}, {f.y.data(), 0}),
      "M = -3 is not a valid extent");
  EXPECT_USER_ERROR(f.kernel.run({1, 2}, {}, {f.y.data(), 0}), "got 2 shape values, expected 1");
  EXPECT_USER_ERROR(ops::dense(1, 8, 0, 10), "dimension 0 is not positive");
  EXPECT_USER_ERROR(te::shape_var("T", 0, 8), "lower bound 0 must be >= 1");
  EXPECT_USER_ERROR(te::shape_var("T", 9, 8), "range [9, 8] is empty");
}

TEST(Errors, ShapeOutsideDeclaredRange) {
  // Declared M in [1, 16]; M = 40 still computes correctly unless strict ranges are asked for.
  Fixture f;
  std::mt19937_64 rng(1);
  reference::CheckCase c = reference::make_check_case(f.op, {40}, rng);
  EXPECT_LE(reference::run_check_case(f.kernel, c), 1e-5);
  runtime::AlignedBuffer x(40 * 10), y(40 * 24);
  EXPECT_USER_ERROR(f.kernel.run({40}, {{x.data(), x.size()}, {f.w.data(), f.w.size()}},
                                 {y.data(), y.size()}, runtime::RunOptions{.strict_ranges = true}),
                    "M = 40 is outside its declared range [1, 16]");
}

TEST(Errors, PrepackedInputMustBeThePackedBuffer) {
  // N = 21 pads to 24 in the packed layout: 10 x 24 packed elements, not 10 x 21.
  te::Operator op = ops::dense(1, 16, 21, 10);
  schedule::MicroKernelSchedule s = small_schedule();
  s.pack_b = schedule::PackB::Prepacked;
  runtime::Kernel k = runtime::Kernel::compile(op, s);
  runtime::AlignedBuffer x(50), w(210), y(105);
  EXPECT_USER_ERROR(k.run({5}, {{x.data(), x.size()}, {w.data(), w.size()}}, {y.data(), y.size()}),
                    "buffer W (pre-packed) has 210 elements, expected 256");
  // Raw weights of exactly the packed size are refused too, by the packed header.
  runtime::AlignedBuffer raw(k.packed_size({5}));
  for (int64_t i = 0; i < raw.size(); ++i) raw[i] = 0.5f;
  EXPECT_USER_ERROR(
      k.run({5}, {{x.data(), x.size()}, {raw.data(), raw.size()}}, {y.data(), y.size()}),
      "does not hold pre-packed weights");
  // Weights packed by a kernel of another operator with the same packed size (N = 24, no
  // padding) are refused.
  runtime::Kernel k2 = runtime::Kernel::compile(ops::dense(1, 16, 24, 10), s);
  runtime::AlignedBuffer w2(240);
  runtime::AlignedBuffer packed2 = k2.prepack({5}, {w2.data(), w2.size()});
  ASSERT_EQ(packed2.size(), k.packed_size({5}));
  EXPECT_USER_ERROR(
      k.run({5}, {{x.data(), x.size()}, {packed2.data(), packed2.size()}}, {y.data(), y.size()}),
      "packed for another micro-kernel");
  // A kernel of the same operator with another unroll, tile width and k-block packs the
  // same way (panels one vector wide over all of K) and accepts them: modules share them.
  schedule::MicroKernelSchedule same = s;
  same.unroll_k = 1;
  same.nr = 16;
  same.kc = 4;
  runtime::Kernel k3 = runtime::Kernel::compile(op, same);
  runtime::AlignedBuffer packed3 = k3.prepack({5}, {w.data(), w.size()});
  k.run({5}, {{x.data(), x.size()}, {packed3.data(), packed3.size()}}, {y.data(), y.size()});
  EXPECT_USER_ERROR(k.prepack({5}, {w.data(), 209}), "buffer W has 209 elements, expected 210");
  runtime::Kernel unpacked = runtime::Kernel::compile(op, small_schedule());
  EXPECT_USER_ERROR(unpacked.prepack({5}, {w.data(), w.size()}), "does not pre-pack");
}

TEST(Errors, OperatorsThatAreNotContractions) {
  te::ShapeVar m = te::shape_var("M", 1, 8);
  ir::Expr mv = m.var;
  te::Input x = te::input("X", {mv, ir::Expr(4)});
  te::ComputeOp copy =
      te::compute("Y", {mv, ir::Expr(4)}, {"i", "j"}, [&](const std::vector<ir::Var>& ax) {
        return ir::load(x.tensor, {ax[0], ax[1]});
      });
  te::Operator op{"copy", {m}, {x}, copy, {}};
  EXPECT_USER_ERROR(ops::match_contraction(op), "(no reduction)");
  EXPECT_USER_ERROR(runtime::Kernel::compile(op, small_schedule()), "is not a contraction");
}

// Epilogues the micro-kernel cannot apply in its registers are refused by name.
TEST(Errors, EpiloguesThatAreNotElementwise) {
  te::ShapeVar m = te::shape_var("M", 1, 8);
  ir::Expr mv = m.var;
  te::Input x = te::input("X", {mv, ir::Expr(4)});
  te::Input w = te::input("W", {ir::Expr(6), ir::Expr(4)}, true);
  te::Input r = te::input("R", {ir::Expr(6), mv});
  te::Input v = te::input("V", {ir::Expr(4)});
  auto with_epilogue = [&](std::function<ir::Expr(ir::Expr, const std::vector<ir::Var>&)> epi) {
    te::ComputeOp y =
        te::compute("Y", {mv, ir::Expr(6)}, {"i", "j"}, [&](const std::vector<ir::Var>& ax) {
          ir::Var k("k");
          ir::Expr sum =
              ir::reduce_sum(k, 4, ir::load(x.tensor, {ax[0], k}) * ir::load(w.tensor, {ax[1], k}));
          return epi(sum, ax);
        });
    return te::Operator{"dense_epi", {m}, {x, w, r, v}, y, {}};
  };
  EXPECT_USER_ERROR(ops::match_contraction(with_epilogue([&](ir::Expr s, auto& ax) {
                      return s + ir::load(r.tensor, {ax[1], ax[0]});
                    })),
                    "the epilogue input R is not contiguous along the output's last axis");
  EXPECT_USER_ERROR(ops::match_contraction(with_epilogue([&](ir::Expr s, auto&) {
                      ir::Var k2("k2");
                      return s + ir::reduce_sum(k2, 4, ir::load(v.tensor, {k2}));
                    })),
                    "the epilogue holds a second reduction");
  EXPECT_USER_ERROR(ops::match_contraction(with_epilogue([&](ir::Expr s, auto& ax) {
                      return s * ir::call(ir::CallOp::ToFloat, {ax[0]});
                    })),
                    "the epilogue converts an index to float");
  EXPECT_USER_ERROR(ops::parse_epilogue("bias+residual+bias"), "bias appears twice");
  EXPECT_USER_ERROR(ops::parse_epilogue("bias+sigmoid"), "'sigmoid' is not a step");
}

TEST(Errors, ScheduleForAnIsaTheHostLacks) {
  if (codegen::host_supports(schedule::Isa::Avx512)) GTEST_SKIP() << "this host runs AVX-512 code";
  schedule::MicroKernelSchedule s = small_schedule();
  s.isa = schedule::Isa::Avx512;
  s.nr = 16;
  s.nc = 32;
  EXPECT_USER_ERROR(runtime::Kernel::compile(ops::dense(1, 16, 32, 10), s), "only supports avx2");
}

TEST(Errors, CommandLineValues) {
  EXPECT_USER_ERROR(parse_int_list("", "--M"), "--M: empty list");
  EXPECT_USER_ERROR(parse_int_list("1,x", "--M"), "'x' is not an integer");
  EXPECT_USER_ERROR(parse_int_list("0..4", "--M"), "0 is not positive");
  EXPECT_USER_ERROR(parse_int_list("9..3", "--M"), "range '9..3' is empty");
  EXPECT_USER_ERROR(ops::parse_epilogue("bias_tanh"), "unknown epilogue 'bias_tanh'");
  EXPECT_USER_ERROR(ops::parse_layout("TN"), "unknown layout 'TN'");
}
