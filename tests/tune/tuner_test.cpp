// The tuner end to end on a small operator: a module that computes every shape
// (declared, between, and far outside the range) correctly; resuming from records;
// the per-shape baseline.
#include "tune/tuner.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <set>

#include "reference/reference.h"
#include "runtime/module.h"
#include "support/error.h"
#include "test_support.h"
#include "tune/trials.h"
#include "tune_support.h"

namespace dietcode::tune {
namespace {

namespace fs = std::filesystem;

class TunerTest : public testing::ScratchDirTest {
 protected:
  TuneOptions options(int64_t trials) const {
    TuneOptions o = testing::small_tune_options(dir_, trials);
    o.op.epilogue = "bias_relu";
    return o;
  }
};

TEST_F(TunerTest, JointModuleIsCorrectForEveryShape) {
  const TuneOptions o = options(48);
  TuneReport r = tune(o);
  EXPECT_EQ(r.trials_total, 48);
  EXPECT_EQ(r.trials_this_run, 48);
  ASSERT_FALSE(r.module.kernels.empty());
  EXPECT_LE(int(r.module.kernels.size()), 8);
  // Through the module file, as a user would get it.
  std::string path = (dir_ / "m.json").string();
  runtime::save_module_spec(r.module, path);
  runtime::Module m = runtime::Module::compile(runtime::load_module_spec(path));
  std::mt19937_64 rng(9);
  std::vector<int64_t> ms;
  for (int64_t M = 1; M <= 24; ++M) ms.push_back(M);
  for (int64_t M : {25, 31, 37, 64, 97, 129, 500, 1031}) ms.push_back(M);  // outside
  for (int64_t M : ms) {
    int k = m.select({M});
    ASSERT_GE(k, 0);
    ASSERT_LT(k, m.num_kernels());
    EXPECT_EQ(k, r.module.dispatch.select({M})) << "compiled vs interpreted tree, M=" << M;
    EXPECT_LT(testing::module_error(m, M, rng), 1e-5) << "M=" << M << " kernel " << k;
  }
  // The weights packed in no more layouts than allowed, whichever kernel a shape runs.
  std::vector<float> w(o.op.n * o.op.k, 1.0f);
  runtime::PackedWeights packed = m.prepack({1}, {w.data(), int64_t(w.size())});
  std::set<const runtime::AlignedBuffer*> copies;
  for (const auto& p : packed.per_kernel)
    if (p) copies.insert(p.get());
  EXPECT_LE(copies.size(), size_t(o.max_weight_layouts));
  // The module file says where it came from.
  EXPECT_EQ(r.module.provenance["mode"], "joint");
  EXPECT_EQ(r.module.provenance["trials"], 48);
  EXPECT_NE(r.module.provenance["records_digest"].get<std::string>().find("fnv1a64:"),
            std::string::npos);
}

// Attention's products: T on both sides (Q K^T: N = M; S V: K = M), declared as data,
// tuned, and correct through the module file past the range; the spec round-trips.
TEST_F(TunerTest, BatchMatmulWithTheShapeVariableOnBothSides) {
  for (bool n_is_m : {true, false}) {
    TuneOptions o = testing::small_tune_options(dir_ / (n_is_m ? "qk" : "sv"), 16);
    fs::create_directories(dir_ / (n_is_m ? "qk" : "sv"));
    o.op.op = "batch_matmul";
    o.op.batch = 3;
    o.op.layout = n_is_m ? "NT" : "NN";
    o.op.n_is_m = n_is_m;
    o.op.k_is_m = !n_is_m;
    o.op.n = n_is_m ? 1 : 20;
    o.op.k = n_is_m ? 20 : 1;
    o.finalists.shapes = 4;
    ops::OperatorSpec back = ops::operator_spec_from_json(ops::to_json(o.op));
    EXPECT_EQ(back, o.op);
    EXPECT_EQ(ops::to_json(o.op)[n_is_m ? "N" : "K"], "M");
    TuneReport r = tune(o);
    std::string path = (dir_ / "m.json").string();
    runtime::save_module_spec(r.module, path);
    runtime::Module m = runtime::Module::compile(runtime::load_module_spec(path));
    std::mt19937_64 rng(5);
    for (int64_t M : {1, 2, 7, 16, 24, 25, 61})
      EXPECT_LT(testing::module_error(m, M, rng), 1e-5) << "M=" << M << " N=M " << n_is_m;
  }
  ops::OperatorSpec both;
  both.op = "batch_matmul";
  both.n_is_m = both.k_is_m = true;
  EXPECT_THROW(both.build(), Error);
  ops::OperatorSpec dense;
  dense.n_is_m = true;
  EXPECT_THROW(dense.build(), Error);
}

TEST_F(TunerTest, ResumesFromRecords) {
  TuneReport first = tune(options(16));
  EXPECT_EQ(first.trials_this_run, 16);
  TuneReport second = tune(options(40));
  EXPECT_EQ(second.trials_total, 40);
  EXPECT_EQ(second.trials_this_run, 24);
  TuneReport third = tune(options(40));  // nothing left to do; still a module
  EXPECT_EQ(third.trials_this_run, 0);
  EXPECT_FALSE(third.module.kernels.empty());
  RecordFile f =
      RecordFile::open({options(0).records_path, workload_json(options(0).op, 1), this_machine()});
  // 40 trials, and the finalists' side-by-side measurements (not trials) beside them.
  int64_t trials = 0, finals = 0;
  for (const TuningRecord& r : f.records()) (is_joint_trial(r.origin) ? trials : finals) += 1;
  EXPECT_EQ(trials, 40);
  EXPECT_GT(finals, 0);
}

TEST_F(TunerTest, PerShapeBaselineTunesEachShapeAlone) {
  TuneOptions o = options(0);
  o.per_shape = true;
  o.trials_per_shape = 12;
  o.per_shape_m = {5, 24};
  TuneReport r = tune(o);
  EXPECT_EQ(r.trials_total, 24);
  ASSERT_EQ(r.shape_seconds.size(), 2u);
  RecordFile f = RecordFile::open({o.records_path, workload_json(o.op, 1), this_machine()});
  for (const TuningRecord& rec : f.records()) {
    EXPECT_EQ(rec.origin, Origin::PerShape);
    int64_t M = rec.shape[0];
    EXPECT_TRUE(M == 5 || M == 24);
    EXPECT_EQ(M % micro_kernel(rec).mr, 0) << "divisor space";
  }
  runtime::Module m = runtime::Module::compile(r.module);
  std::mt19937_64 rng(3);
  for (int64_t M : {1, 5, 6, 24, 77})
    EXPECT_LT(testing::module_error(m, M, rng), 1e-5) << "M=" << M;
}

// The module keeps its weights in no more packed layouts than allowed. Four candidates,
// each measured best on one shape: vector panels with tiles 2 and 3 vectors wide (one
// layout: vector panels do not depend on the tile's width), tile panels 2 and 3 vectors
// wide (a layout each). The runtime's packed copies are the layouts the selection counted.
TEST(BuildModule, KeepsTheWeightsInNoMoreLayoutsThanAllowed) {
  const schedule::Isa isa = codegen::host_target().isa;
  const int64_t v = schedule::vector_isa(isa).width;
  TuneOptions o;
  o.op = testing::small_dense_spec();
  o.op.m_max = 4;
  std::vector<schedule::AnySchedule> candidates;
  for (schedule::BPanel panel : {schedule::BPanel::Vector, schedule::BPanel::Tile})
    for (int64_t vectors : {2, 3}) {
      schedule::MicroKernelSchedule s = testing::prepacked_kernel(2);
      s.nr = vectors * v;
      s.nc = 6 * v;
      s.b_panel = panel;
      candidates.push_back(s);
    }
  const std::vector<std::vector<double>> score = {
      {10, 9, 8, 8}, {9, 10, 8, 8}, {8, 8, 10, 9}, {8, 8, 9, 10}};
  PredictAt predict = [](const std::vector<schedule::AnySchedule>& k,
                         const std::vector<std::vector<int64_t>>& shapes) {
    return std::vector<std::vector<double>>(k.size(), std::vector<double>(shapes.size(), 1.0));
  };
  for (int budget : {0, 1, 2, 3}) {
    o.max_weight_layouts = budget;
    std::vector<std::string> notes;
    runtime::ModuleSpec spec = build_module(o, predict, candidates, score, 8, notes);
    runtime::Module m = runtime::Module::compile(spec);
    std::vector<float> w(o.op.n * o.op.k, 1.0f);
    runtime::PackedWeights packed = m.prepack({1}, {w.data(), int64_t(w.size())});
    std::set<const runtime::AlignedBuffer*> copies;
    for (const auto& p : packed.per_kernel)
      if (p) copies.insert(p.get());
    const size_t expected = budget == 0 ? 3 : std::min(budget, 3);
    EXPECT_EQ(copies.size(), expected) << "budget " << budget;
    ASSERT_FALSE(notes.empty());
    EXPECT_NE(notes.back().find(fmt::format("weights packed in {} layout", expected)),
              std::string::npos)
        << notes.back();
    std::mt19937_64 rng(11);
    for (int64_t M : {1, 2, 3, 4, 7})
      EXPECT_LT(testing::module_error(m, M, rng), 1e-5) << "budget " << budget << ", M=" << M;
  }
}

// Which kernels a selection may still take beside the ones it has, under the budget:
// vector panels of any width are one layout, tile panels one per width.
TEST(BuildModule, ChallengersComeFromTheLayoutsTheBudgetLetsItKeep) {
  const int64_t v = schedule::vector_isa(codegen::host_target().isa).width;
  TuneOptions o;
  o.op = testing::small_dense_spec();
  auto kernel = [&](schedule::BPanel panel, int64_t vectors) -> schedule::AnySchedule {
    schedule::MicroKernelSchedule s = testing::prepacked_kernel(2);
    s.nr = vectors * v;
    s.nc = 6 * v;
    s.b_panel = panel;
    return s;
  };
  const schedule::AnySchedule vec2 = kernel(schedule::BPanel::Vector, 2),
                              vec3 = kernel(schedule::BPanel::Vector, 3),
                              tile2 = kernel(schedule::BPanel::Tile, 2),
                              tile3 = kernel(schedule::BPanel::Tile, 3);
  LayoutIds layout_of(o.op.build());
  EXPECT_EQ(layout_of(vec2), layout_of(vec3));
  EXPECT_NE(layout_of(vec2), layout_of(tile2));
  EXPECT_NE(layout_of(tile2), layout_of(tile3));
  const std::vector<schedule::AnySchedule> all = {vec3, tile2, tile3};
  o.max_weight_layouts = 1;
  EXPECT_EQ(within_layout_budget(o, layout_of, {vec2}, all),
            (std::vector<bool>{true, false, false}));
  o.max_weight_layouts = 2;  // room for one more layout: any
  EXPECT_EQ(within_layout_budget(o, layout_of, {vec2}, all), (std::vector<bool>{true, true, true}));
  EXPECT_EQ(within_layout_budget(o, layout_of, {vec2, tile2}, all),
            (std::vector<bool>{true, true, false}));
  o.max_weight_layouts = 0;  // no limit
  EXPECT_EQ(within_layout_budget(o, layout_of, {vec2, tile2}, all),
            (std::vector<bool>{true, true, true}));
}

TEST_F(TunerTest, BadOptionsAreClearErrors) {
  TuneOptions o = options(10);
  o.records_path.clear();
  EXPECT_USER_ERROR(tune(o), "--records");
  o = options(10);
  o.per_shape = true;
  o.per_shape_m = {30};
  EXPECT_USER_ERROR(tune(o), "outside the declared range 1..24");
  o = options(10);
  o.op.m_min = 9;
  o.op.m_max = 3;
  EXPECT_USER_ERROR(tune(o), "M range 9..3");
  o = options(10);
  o.max_kernels = 0;
  EXPECT_USER_ERROR(tune(o), "--max-kernels 0: expected >= 1");
  o = options(10);
  o.max_weight_layouts = -1;
  EXPECT_USER_ERROR(tune(o), "--weight-layouts -1: expected >= 0");
}

}  // namespace
}  // namespace dietcode::tune
