// The tuning report: the numbers behind its plots, the page and its plot files, escaping,
// and its errors. (Whether the browser shows every image: check_images_in_chromium.sh.)
#include "report/tuning_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "report/gnuplot.h"
#include "report/held_out_model.h"
#include "report/html.h"
#include "report/tuning_series.h"
#include "sample_input.h"
#include "test_support.h"
#include "tune/tuner.h"

namespace dietcode::report {
namespace {

namespace fs = std::filesystem;

const std::string kRecords = DIETCODE_TEST_DATA "/records_dense_2304x768_random600.jsonl";

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dietcode-report-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

tune::TuningRecord record(int64_t m, double gflops, const std::string& error = "") {
  tune::TuningRecord r;
  r.shape = {m};
  r.gflops = gflops;
  r.error = error;
  r.origin = tune::Origin::Joint;
  return r;
}

TEST(TuningCurve, BestPerShapeGeomeanWithFailuresCountedAsTrials) {
  std::vector<std::vector<int64_t>> shapes = {{1}, {2}, {3}};
  std::vector<tune::TuningRecord> records = {
      record(1, 0, "crashed"),  // trial 1: nothing measured yet -> no point
      record(1, 10),            // trial 2: {1: 10}
      record(2, 40),            // trial 3: {1: 10, 2: 40} -> 20
      record(1, 5),             // trial 4: worse, no change
      record(9, 1000),          // trial 5: not a declared shape, no change
      record(1, 40),            // trial 6: {1: 40, 2: 40} -> 40
      record(3, 0, "wrong"),    // trial 7: failed, no change
  };
  std::vector<CurvePoint> c = tuning_curve(records, shapes);
  ASSERT_EQ(c.size(), 6u);
  EXPECT_EQ(c[0].trials, 2);
  EXPECT_DOUBLE_EQ(c[0].geomean_gflops, 10);
  EXPECT_EQ(c[0].shapes_measured, 1);
  EXPECT_NEAR(c[1].geomean_gflops, 20, 1e-9);
  EXPECT_EQ(c[1].shapes_measured, 2);
  EXPECT_NEAR(c[2].geomean_gflops, 20, 1e-9);
  EXPECT_NEAR(c[3].geomean_gflops, 20, 1e-9);
  EXPECT_NEAR(c[4].geomean_gflops, 40, 1e-9);
  EXPECT_EQ(c[5].trials, 7);
  EXPECT_EQ(c[5].shapes_measured, 2);
}

TEST(TuningCurve, NeverDecreasesOnRealRecords) {
  std::vector<tune::TuningRecord> records = tune::read_records_any_machine(kRecords);
  ops::OperatorSpec op;
  op.m_min = 1;
  op.m_max = 128;
  std::vector<CurvePoint> c = tuning_curve(records, op.declared_shapes());
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c.back().trials, int64_t(records.size()));
  for (size_t i = 1; i < c.size(); ++i) {
    EXPECT_GE(c[i].shapes_measured, c[i - 1].shapes_measured);
    // Only a newly measured shape can pull the geomean down.
    if (c[i].shapes_measured == c[i - 1].shapes_measured) {
      EXPECT_GE(c[i].geomean_gflops, c[i - 1].geomean_gflops * (1 - 1e-12)) << i;
    }
  }
}

TEST(KernelShares, CountsWeightsAndRunsOfM) {
  bench::BenchResult b;
  TuningReportInput in = testing::sample_input(kRecords, b);
  const OperatorResult& qkv = in.operators[0];
  std::vector<ShapeRow> rows = shape_table(qkv.module, qkv.records);
  ASSERT_EQ(rows.size(), 128u);
  std::vector<KernelShare> s = kernel_shares(qkv.module, rows);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].shapes, 16);
  EXPECT_EQ(s[1].shapes, 48);
  EXPECT_EQ(s[2].shapes, 64);
  EXPECT_EQ(s[0].m_values, "1..16");
  EXPECT_EQ(s[1].m_values, "17..64");
  EXPECT_EQ(s[2].m_values, "65..128");
  EXPECT_DOUBLE_EQ(s[2].weight, 0.5);
  // The last kernel is the fastest record of all, so it is the best at its shape.
  bool some_best = false;
  for (const ShapeRow& r : rows) {
    EXPECT_LE(r.selected_gflops, r.best_gflops);
    some_best |= r.selected_gflops > 0 && r.selected_gflops == r.best_gflops;
  }
  EXPECT_TRUE(some_best);

  // Weighted instances that are not consecutive: each its own run.
  const OperatorResult& small = in.operators[1];
  std::vector<KernelShare> w =
      kernel_shares(small.module, shape_table(small.module, small.records));
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].m_values, "1, 8");
  EXPECT_EQ(w[1].m_values, "16, 33");
  EXPECT_NEAR(w[0].weight, 6 / 7.5, 1e-12);
}

TEST(HeldOutModel, AgreesWithTheTunersEvaluation) {
  std::vector<tune::TuningRecord> records = tune::read_records_any_machine(kRecords);
  ops::OperatorSpec op;
  op.n = 2304;
  op.k = 768;
  op.m_min = 1;
  op.m_max = 128;
  HeldOutModel h = held_out_model(op, 1, records);
  tune::ModelEvaluation e = tune::evaluate_cost_model(op, 1, records);
  EXPECT_EQ(h.train, e.train);
  EXPECT_EQ(h.test.size(), e.test);
  EXPECT_TRUE(h.learned);
  EXPECT_NEAR(h.ranking_accuracy, e.accuracy, 1e-9);
  for (const HeldOutPoint& p : h.test) {
    EXPECT_GT(p.predicted_gflops, 0);
    EXPECT_GT(p.measured_gflops, 0);
  }
  EXPECT_GT(h.median_relative_error, 0);
  EXPECT_LT(h.median_relative_error, 1);
}

TEST_F(ReportTest, PageReferencesEveryPlotAndEveryPlotExists) {
  bench::BenchResult b;
  TuningReportInput in = testing::sample_input(kRecords, b);
  write_tuning_report(in, dir_.string());
  ASSERT_TRUE(fs::exists(dir_ / "index.html"));
  std::string page = read_file(dir_ / "index.html");
  std::set<std::string> referenced;
  std::regex img("<img src=\"([^\"]+)\"");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), img); it != std::sregex_iterator();
       ++it)
    referenced.insert((*it)[1]);
  // Every plot of the benchmarked operator; the small one has no benchmark but its
  // records; the untuned one has nothing to draw.
  for (const char* plot : {"tuning", "gflops", "kernels", "cost-model"})
    EXPECT_TRUE(referenced.count(fmt::format("op1-qkv__proj_____x_-{}.svg", plot))) << plot;
  for (const char* plot : {"tuning", "gflops", "kernels"})
    EXPECT_TRUE(referenced.count(fmt::format("op2-small-{}.svg", plot))) << plot;
  EXPECT_TRUE(referenced.count("op3-untuned-kernels.svg"));
  EXPECT_FALSE(referenced.count("op3-untuned-tuning.svg"));
  std::set<std::string> on_disk;
  for (const auto& e : fs::directory_iterator(dir_))
    if (e.path().extension() == ".svg") on_disk.insert(e.path().filename().string());
  EXPECT_EQ(referenced, on_disk);
  for (const std::string& f : referenced) {
    ASSERT_TRUE(fs::exists(dir_ / f)) << f;
    EXPECT_GT(fs::file_size(dir_ / f), 1000u) << f;
    std::string svg = read_file(dir_ / f);
    EXPECT_NE(svg.find("<svg"), std::string::npos) << f;
    EXPECT_NE(svg.find("</svg>"), std::string::npos) << f;
    // The numbers and the script stay beside the image.
    std::string stem = fs::path(f).stem().string();
    EXPECT_TRUE(fs::exists(dir_ / "data" / (stem + ".dat"))) << f;
    EXPECT_TRUE(fs::exists(dir_ / "data" / (stem + ".gp"))) << f;
  }
  // Self-contained: nothing fetched from elsewhere.
  for (const char* external : {"src=\"http", "href=\"http", "<link", "@import", "url("})
    EXPECT_EQ(page.find(external), std::string::npos) << external;
  // The honest parts: units, the curve's definition, peers, provenance, notes, gaps.
  for (const char* text :
       {"GFLOP/s", "A shape enters the mean at its first correct measurement", "onednn", "openblas",
        "dietcode (this module)", "roofline", "dietcode 0.1.0", "peer not available: blis (sample)",
        "Pairwise ranking accuracy", "not benchmarked", "No correct measurement", "17..64",
        "have no correct measurement in the records", "f<sub>MK</sub> is a constant"})
    EXPECT_NE(page.find(text), std::string::npos) << text;
}

TEST_F(ReportTest, EscapesEveryText) {
  bench::BenchResult b;
  TuningReportInput in = testing::sample_input(kRecords, b);
  write_tuning_report(in, dir_.string());
  std::string page = read_file(dir_ / "index.html");
  EXPECT_EQ(page.find("<proj>"), std::string::npos);
  EXPECT_EQ(page.find("<workload>"), std::string::npos);
  EXPECT_EQ(page.find("<script>alert"), std::string::npos);
  EXPECT_NE(page.find("qkv &lt;proj&gt; &amp; &#39;x&#39;"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;alert"), std::string::npos);
  // The only script is the page's own image check.
  size_t first = page.find("<script>");
  EXPECT_NE(first, std::string::npos);
  EXPECT_EQ(page.find("<script>", first + 1), std::string::npos);
  EXPECT_EQ(escape_html("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
  EXPECT_EQ(gnuplot_quote("it's"), "'it''s'");
}

TEST_F(ReportTest, RefusesAFolderThatIsAFile) {
  std::ofstream(dir_.string()) << "not a folder";
  TuningReportInput in;
  in.workload = "w";
  EXPECT_USER_ERROR(write_tuning_report(in, dir_.string()), "cannot create the folder");
  fs::remove(dir_);
}

TEST_F(ReportTest, NamesGnuplotWhenItIsMissing) {
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", "/nonexistent", 1);
  Plot p;
  p.series.push_back(data_series("one", "1:2", "lines", "1 2\n2 3\n"));
  try {
    draw_plot(p, dir_, "plot");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gnuplot"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gnuplot-nox"), std::string::npos) << e.what();
  }
  ::setenv("PATH", path.c_str(), 1);
}

TEST_F(ReportTest, NamesGnuplotsErrorInTheScript) {
  Plot p;
  p.settings = {"set no_such_setting"};
  p.series.push_back(data_series("one", "1:2", "lines", "1 2\n2 3\n"));
  EXPECT_USER_ERROR(draw_plot(p, dir_, "plot"), "gnuplot failed to draw");
}

}  // namespace
}  // namespace dietcode::report
