// The joint tuner for row operators and fused attention (tune/small_space.h): the space
// and its cost terms, then small tuning runs whose modules are checked against float64
// on declared shapes, primes and shapes past the range; a resumed run measures nothing
// again; records of the wrong kind are refused.
#include "tune/small_space.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "support/error.h"
#include "tune_support.h"

namespace dietcode::tune {
namespace {

ops::OperatorSpec row_spec(const std::string& name, int64_t n) {
  ops::OperatorSpec op;
  op.op = name;
  op.n = n;
  op.m_min = 1;
  op.m_max = 24;
  return op;
}

ops::OperatorSpec attention_spec() {
  ops::OperatorSpec op;
  op.op = "attention";
  op.batch = 1;
  op.n = 2;   // heads
  op.k = 24;  // head size
  op.m_min = 1;
  op.m_max = 24;
  return op;
}

TEST(SmallSpace, EveryScheduleBindsAndTheCostTermsFollowTheShape) {
  const schedule::Isa isa = codegen::host_target().isa;
  const int64_t w = schedule::vector_isa(isa).width;
  SmallSpace ln(row_spec("layer_norm", 3 * w + 1), isa, 1);
  // 6 row counts x 4 unrolls x 2 pass forms, and groups of 4 rows (tasks of >= 4 rows,
  // unroll 1 or 2) x 2 pass forms.
  EXPECT_EQ(ln.kernels().size(), 48u + 4 * 2 * 2);
  SmallSpace gelu(row_spec("gelu", 2 * w), isa, 2);
  EXPECT_EQ(gelu.kernels().size(), 24u);  // no reduction: one pass form
  KindExtents e = ln.extents({5});
  EXPECT_EQ(e.rows, 5);
  EXPECT_EQ(e.length, 3 * w + 1);
  // The masked tail: 3w + 1 useful lanes of 4w.
  EXPECT_DOUBLE_EQ(ln.pad(ln.kernels()[0], e), double(3 * w + 1) / double(4 * w));
  EXPECT_EQ(ln.tasks(ln.kernels()[0], e), 1);  // one thread: nothing parallel
  schedule::RowSchedule r = std::get<schedule::RowSchedule>(gelu.kernels()[0]);
  ASSERT_TRUE(r.parallel);
  EXPECT_EQ(gelu.tasks(r, gelu.extents({9})), (9 + r.rows_per_task - 1) / r.rows_per_task);

  SmallSpace att(attention_spec(), isa, 2);
  ASSERT_GT(att.kernels().size(), 100u);
  te::Operator op = attention_spec().build();
  for (const auto& k : att.kernels()) EXPECT_NO_THROW(schedule::check_binds(k, op));
  schedule::AttentionSchedule a;
  a.isa = isa;
  a.query_tile = 4;
  a.key_block = 8;
  a.unroll = 2;
  a.parallel = schedule::AttentionParallel::HeadsAndQueryTiles;
  KindExtents t = att.extents({5});
  EXPECT_EQ(t.rows, 2);
  EXPECT_EQ(t.length, 5);
  EXPECT_EQ(t.depth, 24);
  EXPECT_EQ(att.tasks(a, t), 2 * 2);  // 2 heads x ceil(5 / 4) query tiles
  // Queries: 5 of 2 tiles x one vector of w lanes; keys: 5 of 6 (unroll 2).
  EXPECT_DOUBLE_EQ(att.pad(a, t), 5.0 / double(2 * w) * 5.0 / 6.0);

  EXPECT_THROW(SmallSpace(testing::small_dense_spec(), isa, 1), Error);
}

class SmallSpaceTuning : public testing::ScratchDirTest {
 protected:
  TuneOptions options(const ops::OperatorSpec& op, int64_t trials, int threads) {
    TuneOptions o = testing::small_tune_options(dir_, trials);
    o.op = op;
    o.threads = threads;
    o.search.measure_per_round = 8;
    o.finalists.shapes = 4;
    return o;
  }

  // Tunes, checks the module on every kind of shape, resumes.
  void tune_and_check(const TuneOptions& o, const std::string& what) {
    TuneReport r = tune(o);
    EXPECT_EQ(r.trials_total, o.trials) << what;
    ASSERT_FALSE(r.module.kernels.empty()) << what;
    for (const auto& k : r.module.kernels)
      EXPECT_EQ(schedule::kind_of(k), schedule::kind_of_operator(o.op)) << what;
    RecordFile f =
        RecordFile::open({o.records_path, workload_json(o.op, o.threads), this_machine()});
    int finals = 0;
    std::set<std::vector<int64_t>> final_shapes;
    for (const TuningRecord& rec : f.records()) {
      EXPECT_TRUE(rec.ok()) << what << ": " << rec.error;
      if (rec.origin == Origin::Final) {
        ++finals;
        final_shapes.insert(rec.shape);
      }
    }
    EXPECT_GT(finals, 0) << what;
    EXPECT_GE(final_shapes.size(), 3u) << what;
    // Round trip through the file, then every kind of shape against float64.
    std::string path = (dir_ / "module.json").string();
    runtime::save_module_spec(r.module, path);
    runtime::Module m = runtime::Module::compile(runtime::load_module_spec(path));
    std::mt19937_64 rng(11);
    for (int64_t M : {1, 2, 7, 13, 24, 25, 77})
      EXPECT_LT(testing::module_error(m, M, rng), 1e-5) << what << " M=" << M;
    TuneReport again = tune(o);
    EXPECT_EQ(again.trials_this_run, 0) << what;
    EXPECT_EQ(again.module.kernels, r.module.kernels) << what;
  }
};

TEST_F(SmallSpaceTuning, LayerNormOneThread) {
  tune_and_check(options(row_spec("layer_norm", 37), 12, 1), "layer_norm");
}

TEST_F(SmallSpaceTuning, SoftmaxTwoThreads) {
  tune_and_check(options(row_spec("softmax", 19), 10, 2), "softmax");
}

TEST_F(SmallSpaceTuning, AttentionTwoThreads) {
  ops::OperatorSpec op = attention_spec();
  op.mask = true;
  tune_and_check(options(op, 10, 2), "attention");
}

TEST_F(SmallSpaceTuning, RecordsOfAnotherKindAreRefused) {
  TuneOptions o = options(row_spec("layer_norm", 37), 4, 1);
  tune(o);
  // A contraction's schedule slipped into the layer_norm records.
  std::ofstream(o.records_path, std::ios::app)
      << R"({"schedule": )" << schedule::to_json_text(testing::prepacked_kernel(2))
      << R"(, "shape": [3], "origin": "joint", "seconds": 1e-6, "gflops": 1, "max_rel_err": 0, )"
      << R"("compile_seconds": 0, "error": "", "unix_time": 1})"
      << "\n";
  try {
    tune(o);
    FAIL() << "records with a contraction schedule were accepted for layer_norm";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a contraction schedule in records of an operator that "
                                         "takes row schedules"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(SmallSpaceTuning, PerShapeIsRefusedBeforeAnyFile) {
  TuneOptions o = options(attention_spec(), 4, 1);
  o.per_shape = true;
  EXPECT_THROW(tune(o), Error);
  EXPECT_FALSE(std::filesystem::exists(o.records_path));
}

}  // namespace
}  // namespace dietcode::tune
