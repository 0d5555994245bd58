// Unit tests of the expression and loop IR: construction, folding, printing,
// affine analysis, evaluation, simplification.
#include <gtest/gtest.h>

#include "ir/affine.h"
#include "ir/evaluate.h"
#include "ir/printer.h"
#include "ir/simplify.h"
#include "ir/visit.h"
#include "support/parse.h"
#include "test_support.h"

using namespace dietcode::ir;

TEST(Expr, ConstantsFoldWithFloorSemantics) {
  EXPECT_TRUE(is_const(Expr(7) / Expr(2), 3));
  EXPECT_TRUE(is_const(Expr(-7) / Expr(2), -4));
  EXPECT_TRUE(is_const(Expr(-7) % Expr(2), 1));
  EXPECT_TRUE(is_const(min(Expr(3), Expr(9)), 3));
  Var x("x");
  EXPECT_TRUE(Expr(x + 0).same_as(x));
  EXPECT_TRUE(is_const(Expr(x) * 0, 0));
  EXPECT_TRUE(Expr(x * 1).same_as(x));
}

TEST(Expr, VariablesAreIdentifiedByIdentityNotName) {
  Var a("i"), b("i");
  EXPECT_FALSE(a == b);
  Expr e = Expr(a) + b;
  EXPECT_TRUE(uses_var(e, a.get()));
  Expr only_a = a * 3;
  EXPECT_FALSE(uses_var(only_a, b.get()));
}

TEST(Expr, PrinterUsesMinimalParentheses) {
  Var i("i"), j("j");
  EXPECT_EQ(to_string((Expr(i) + j) * 4), "(i + j)*4");
  EXPECT_EQ(to_string(Expr(i) + Expr(j) * 4), "i + j*4");
  EXPECT_EQ(to_string(Expr(i) - (Expr(j) - 1)), "i - (j - 1)");
  Buffer x("X", {Expr(8), Expr(4)});
  EXPECT_EQ(to_string(load(x, {i, j})), "X[i, j]");
}

TEST(Expr, EvaluateMatchesFloorDivision) {
  Var m("M");
  Bindings b{{m.get(), 17}};
  EXPECT_EQ(evaluate_int(ceil_div(m, 4), b), 5);
  EXPECT_EQ(evaluate_int(Expr(m) % 4, b), 1);
  EXPECT_EQ(evaluate_int(min(Expr(m), 16) * 2 + 1, b), 33);
  EXPECT_EQ(evaluate_int((Expr(0) - m) / 4, b), -5);
}

// The compiled form of an integer expression (the runtime's per-call buffer sizes) agrees
// with the tree walk, selects and floor division included, over many values.
TEST(Expr, CompiledIntProgramMatchesEvaluate) {
  Var m("M"), t("T");
  std::vector<Expr> exprs{
      Expr(12) * m * 64,
      Expr(12) * m * t,
      Expr(7),
      Expr(m) * m * t * 2,
      ceil_div(m, 4) * 4 * (Expr(t) % 3) + 1,
      (Expr(0) - m) / 4 - min(Expr(m), Expr(t)) + max(Expr(m) - 7, Expr(2)),
      select(Expr(m) < Expr(t), Expr(m) * 2, Expr(t) - 5),
      select(eq(Expr(m) % 2, 0), select(Expr(t) < Expr(10), Expr(1), Expr(2)), Expr(m) / Expr(t))};
  for (const Expr& e : exprs) {
    IntProgram program(e, {m, t});
    for (int64_t mv : {1, 2, 7, 16, 129})
      for (int64_t tv : {1, 3, 10, 64}) {
        const int64_t values[] = {mv, tv};
        EXPECT_EQ(program(values), evaluate_int(e, {{m.get(), mv}, {t.get(), tv}}))
            << to_string(e) << " at M=" << mv << " T=" << tv;
      }
  }
  EXPECT_THROW(IntProgram(Expr(m) + Var("other"), {m}), dietcode::InternalError);
}

TEST(Affine, FindsStridesOfRowMajorAccess) {
  Var m("m"), k("k"), K("K");
  Buffer x("X", {Expr(100), Expr(K)});
  auto form = affine_form(flatten_index(x, {m, k}), {m, k});
  ASSERT_TRUE(form.has_value());
  Bindings b{{K.get(), 768}};
  EXPECT_EQ(evaluate_int(form->coefficients[0], b), 768);
  EXPECT_EQ(evaluate_int(form->coefficients[1], b), 1);
  EXPECT_EQ(evaluate_int(form->constant, b), 0);
}

TEST(Affine, RejectsNonAffineIndex) {
  Var m("m"), k("k");
  EXPECT_FALSE(affine_form(Expr(m) * k, {m, k}).has_value());
  EXPECT_FALSE(affine_form(Expr(k) / 4 + m, {m, k}).has_value());
  EXPECT_FALSE(affine_form(Expr(k) % 3, {k}).has_value());
}

TEST(Simplify, ReassociatesConstantsAndExactDivision) {
  Var x("x");
  EXPECT_EQ(to_string(simplify((Expr(x) + 3) + 4)), "x + 7");
  EXPECT_EQ(to_string(simplify((Expr(x) * 64) / 16)), "x*4");
  EXPECT_EQ(to_string(simplify((Expr(x) * 6) / 4)), "x*6/4");  // not exact: unchanged
}

TEST(Simplify, RemovesOneIterationLoops) {
  Var i("i");
  Buffer y("Y", {Expr(4)});
  Stmt loop = make_for(i, 2, 1, ForKind::Serial, make_store(y, {i}, make_float(1.0)));
  Stmt s = simplify(loop);
  EXPECT_EQ(s.kind(), StmtKind::LetStmt);
}

TEST(Parse, IntListsAndRanges) {
  using dietcode::parse_int_list;
  EXPECT_EQ(parse_int_list("3,1,2", "--M"), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(parse_int_list("1..4,9", "--M"), (std::vector<int64_t>{1, 2, 3, 4, 9}));
  EXPECT_EQ(parse_int_list("5,5", "--M"), (std::vector<int64_t>{5}));
}

TEST(Parse, NameLists) {
  using dietcode::split_names;
  using Names = std::vector<std::string>;
  EXPECT_EQ(split_names("openblas,onednn"), (Names{"openblas", "onednn"}));
  EXPECT_EQ(split_names("qkv"), (Names{"qkv"}));
  EXPECT_EQ(split_names("a,,b"), (Names{"a", "", "b"}));
  EXPECT_EQ(split_names(""), (Names{""}));
}
