// load_labelled_modules (benchmark/bench_job.h): every module given to `dietcode bench` gets
// a label of its own, so that modules measured side by side are never merged into one column.
#include "benchmark/bench_job.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "dispatch/decision_tree.h"
#include "runtime/module.h"
#include "schedule/random_schedule.h"

namespace dietcode::bench {
namespace {

namespace fs = std::filesystem;

class LabelledModules : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dietcode-bench-job-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A one-kernel dense module named `name`, tuned in `mode`, written to `relative`.
  std::string write(const std::string& relative, const std::string& name,
                    const std::string& mode = "joint") {
    runtime::ModuleSpec m;
    m.op.n = 64;
    m.op.k = 64;
    m.op.m_max = 8;
    m.isa = schedule::Isa::Avx2;
    std::mt19937_64 rng(7);
    m.kernels.push_back(schedule::random_schedule(rng, m.isa, m.op.build()));
    m.dispatch = dispatch::DecisionTree::fit({{1}, {8}}, {0, 0});
    m.provenance = {{"name", name}, {"mode", mode}};
    fs::path path = dir_ / relative;
    fs::create_directories(path.parent_path());
    runtime::save_module_spec(m, path.string());
    return path.string();
  }

  static std::vector<std::string> labels(const std::vector<std::string>& paths) {
    std::vector<std::string> out;
    for (const auto& [label, spec] : load_labelled_modules(paths)) out.push_back(label);
    return out;
  }

  fs::path dir_;
};

TEST_F(LabelledModules, ModulesOfDifferentModesAreLabelledByTheirMode) {
  EXPECT_EQ(labels({write("j.module.json", "x"), write("p.module.json", "x", "per-shape")}),
            (std::vector<std::string>{"joint", "per-shape"}));
}

TEST_F(LabelledModules, OneModuleAloneIsLabelledByWhatItComputes) {
  // The main job's qkv.module.json: by its name, not by its mode ("joint vs sweep").
  EXPECT_EQ(labels({write("a.module.json", "qkv")}), std::vector<std::string>{"qkv"});
  // Tuned with --op (named "operator"): by its file name.
  EXPECT_EQ(labels({write("dense-2304.module.json", "operator")}),
            std::vector<std::string>{"dense-2304"});
  EXPECT_EQ(labels({write("b.module.json", "")}), std::vector<std::string>{"b"});
}

TEST_F(LabelledModules, ModulesOfOneModeAreLabelledByName) {
  EXPECT_EQ(labels({write("m/qkv.module.json", "qkv"), write("m/out.module.json", "out")}),
            (std::vector<std::string>{"qkv", "out"}));
}

TEST_F(LabelledModules, ModulesOfOneNameFromTwoRunsAreLabelledByTheirFolder) {
  // Two runs of the main job: both qkv.module.json, both named qkv.
  std::vector<std::string> got =
      labels({write("run-a/qkv.module.json", "qkv"), write("run-b/qkv.module.json", "qkv"),
              write("run-a/out.module.json", "out")});
  EXPECT_EQ(got, (std::vector<std::string>{"run-a/qkv", "run-b/qkv", "out"}));
}

TEST_F(LabelledModules, EveryLabelIsDistinctEvenWhereFoldersRepeat) {
  std::vector<std::string> paths = {write("x/run/qkv.module.json", "qkv"),
                                    write("y/run/qkv.module.json", "qkv"),
                                    write("y/run/qkv2.module.json", "qkv")};
  std::vector<std::string> got = labels(paths);
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()).size(), got.size());
  EXPECT_EQ(got[0], paths[0]);
  EXPECT_EQ(got[1], paths[1]);
}

}  // namespace
}  // namespace dietcode::bench
