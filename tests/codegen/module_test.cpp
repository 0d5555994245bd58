// Modules through the public API (include/dietcode/dietcode.h): every shape against the
// float64 reference, several threads at once, bad input refused clearly, and a module
// for another ISA refitted to this host when asked.
#include "runtime/module.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <thread>
#include <variant>

#include "codegen/llvm/object_cache.h"
#include "codegen/llvm/target.h"
#include "dietcode/dietcode.h"
#include "reference/reference.h"
#include "test_support.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;

// A hand-made module: three kernels, M <= 4 to the first, <= 40 to the second, the rest
// to the third. Dense N=72 (not a multiple of 16), K=40, bias + GELU.
runtime::ModuleSpec hand_module(schedule::Isa isa) {
  runtime::ModuleSpec m;
  m.op.op = "dense";
  m.op.n = 72;
  m.op.k = 40;
  m.op.m_min = 1;
  m.op.m_max = 64;
  m.op.epilogue = "bias_gelu";
  m.isa = isa;
  const int64_t w = schedule::vector_isa(isa).width;
  auto k1 = testing::make_schedule(isa, 1, 2 * w, 40, 1, 4 * w);
  k1.pack_a = schedule::PackA::Direct;
  k1.pack_b = schedule::PackB::Prepacked;
  auto k2 = testing::make_schedule(isa, 5, 2 * w, 16, 20, 2 * w);
  k2.pack_b = schedule::PackB::Prepacked;
  k2.parallel = schedule::ParallelAxis::N;
  auto k3 = testing::make_schedule(isa, 3, w, 32, 12, 5 * w);  // B packed per block
  m.kernels = {k1, k2, k3};
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int> labels;
  for (int64_t M = 1; M <= 64; ++M) {
    shapes.push_back({M});
    labels.push_back(M <= 4 ? 0 : (M <= 40 ? 1 : 2));
  }
  m.dispatch = dispatch::DecisionTree::fit(shapes, labels);
  m.provenance = {{"mode", "hand"}};
  return m;
}

class ModuleApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dietcode-module-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    path_ = (dir_ / "m.json").string();
    runtime::save_module_spec(hand_module(codegen::host_target().isa), path_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the module on M against the reference; returns the relative error.
  static double check(const Module& m, const runtime::ModuleSpec& spec, int64_t M,
                      const PackedWeights* packed, const std::vector<std::vector<float>>& in) {
    te::Operator op = spec.op.build();
    std::vector<int64_t> sizes = m.buffer_sizes({M});
    std::vector<float> x(sizes[0]);
    std::mt19937_64 rng(M);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (float& v : x) v = dist(rng);
    std::vector<float> y(sizes[3], NAN);
    m.run({M}, {{x.data(), sizes[0]}, {in[0].data(), sizes[1]}, {in[1].data(), sizes[2]}},
          {y.data(), sizes[3]}, packed);
    return reference::relative_error(
        y.data(), reference::evaluate(op, {M}, {x.data(), in[0].data(), in[1].data()}));
  }

  fs::path dir_;
  std::string path_;
};

std::vector<std::vector<float>> weights_and_bias(const Module& m) {
  std::vector<int64_t> sizes = m.buffer_sizes({1});
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<std::vector<float>> out = {std::vector<float>(sizes[1]),
                                         std::vector<float>(sizes[2])};
  for (auto& v : out)
    for (float& f : v) f = dist(rng);
  return out;
}

TEST_F(ModuleApiTest, EveryShapeMatchesTheReference) {
  Module m = Module::load(path_);
  EXPECT_NE(m.describe().find("3 micro-kernels"), std::string::npos) << m.describe();
  EXPECT_EQ(m.shape_variables(), std::vector<std::string>{"M"});
  EXPECT_EQ(m.weights_input(), 1);
  auto in = weights_and_bias(m);
  auto packed = m.prepack(in[0].data(), int64_t(in[0].size()));
  runtime::ModuleSpec spec = runtime::load_module_spec(path_);
  for (int64_t M : {1, 2, 3, 4, 5, 7, 13, 39, 40, 41, 63, 64, 65, 97, 128, 1031}) {
    EXPECT_EQ(m.kernel_for({M}), M <= 4 ? 0 : (M <= 40 ? 1 : 2)) << M;
    EXPECT_LT(check(m, spec, M, packed.get(), in), 1e-5) << "M=" << M;
  }
}

// A module whose kernels read B in three layouts (one-vector panels, and tile panels two
// and three vectors wide, as a warm tuning run's tile-panel seeds leave it): one prepack
// serves them all, each kernel reading its own copy, at every M and past the range.
TEST_F(ModuleApiTest, KernelsOfSeveralPackedLayoutsShareOnePrepack) {
  runtime::ModuleSpec spec = hand_module(codegen::host_target().isa);
  const int64_t w = schedule::vector_isa(spec.isa).width;
  auto k2 = std::get<schedule::MicroKernelSchedule>(spec.kernels[1]);
  k2.b_panel = schedule::BPanel::Tile;
  auto k3 = testing::make_schedule(spec.isa, 3, 3 * w, 40, 12, 3 * w);
  k3.pack_a = schedule::PackA::Direct;
  k3.pack_b = schedule::PackB::Prepacked;
  k3.b_panel = schedule::BPanel::Tile;
  k3.inner_tile_loop = schedule::Axis::N;
  spec.kernels[1] = k2;
  spec.kernels[2] = k3;
  const std::string path = (dir_ / "layouts.json").string();
  runtime::save_module_spec(spec, path);
  Module m = Module::load(path);
  auto in = weights_and_bias(m);
  auto packed = m.prepack(in[0].data(), int64_t(in[0].size()));
  for (int64_t M : {1, 2, 3, 4, 5, 7, 13, 39, 40, 41, 42, 43, 63, 64, 65, 97, 128, 1031}) {
    EXPECT_EQ(m.kernel_for({M}), M <= 4 ? 0 : (M <= 40 ? 1 : 2)) << M;
    EXPECT_LT(check(m, spec, M, packed.get(), in), 1e-5) << "M=" << M;
  }
}

TEST_F(ModuleApiTest, ConcurrentCallsAgreeWithTheReference) {
  Module m = Module::load(path_);
  auto in = weights_and_bias(m);
  auto packed = m.prepack(in[0].data(), int64_t(in[0].size()));
  runtime::ModuleSpec spec = runtime::load_module_spec(path_);
  std::vector<std::thread> threads;
  std::vector<double> worst(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int64_t M = 1 + t; M <= 80; M += 4)
        worst[t] = std::max(worst[t], check(m, spec, M, packed.get(), in));
    });
  for (auto& th : threads) th.join();
  for (double e : worst) EXPECT_LT(e, 1e-5);
}

// The largest relative error of a compiled dense module (X, W, bias) against the float64
// reference over M from 1 to past its range, on fresh random inputs (`seed`), the output
// poisoned first.
double worst_error(const runtime::Module& m, uint64_t seed) {
  const te::Operator& op = m.op();
  std::vector<int64_t> w_sizes = op.buffer_sizes(op.bind({1}));
  std::vector<float> w(w_sizes[1]), bias(w_sizes[2]);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (float& v : w) v = dist(rng);
  for (float& v : bias) v = dist(rng);
  runtime::PackedWeights packed = m.prepack({1}, {w.data(), int64_t(w.size())});
  double worst = 0;
  for (int64_t M : {1, 4, 5, 17, 40, 41, 64, 131}) {
    std::vector<int64_t> sizes = op.buffer_sizes(op.bind({M}));
    std::vector<float> x(sizes[0]), y(sizes[3], NAN);
    for (float& v : x) v = dist(rng);
    m.run({M}, {{x.data(), sizes[0]}, {w.data(), sizes[1]}, {bias.data(), sizes[2]}},
          {y.data(), sizes[3]}, &packed);
    worst = std::max(
        worst, reference::relative_error(
                   y.data(), reference::evaluate(op, {M}, {x.data(), w.data(), bias.data()})));
  }
  return worst;
}

// A model's modules compile together, their kernels sharing the cores: each comes out
// with its own operator, kernels and dispatcher, and computes its operator.
TEST_F(ModuleApiTest, ModulesCompiledTogetherEachComputeTheirOperator) {
  const runtime::ModuleSpec gelu = runtime::load_module_spec(path_);
  runtime::ModuleSpec relu = gelu;
  relu.op.epilogue = "bias_relu";
  relu.kernels.pop_back();  // two kernels: M > 40 to the second
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int> labels;
  for (int64_t M = 1; M <= 64; ++M) {
    shapes.push_back({M});
    labels.push_back(M <= 4 ? 0 : 1);
  }
  relu.dispatch = dispatch::DecisionTree::fit(shapes, labels);
  std::vector<runtime::Module> ms = runtime::Module::compile_all({gelu, relu, gelu});
  ASSERT_EQ(ms.size(), 3u);
  for (size_t i = 0; i < ms.size(); ++i) {
    const bool is_relu = i == 1;
    EXPECT_EQ(ms[i].spec().op.epilogue, is_relu ? "bias_relu" : "bias_gelu");
    EXPECT_EQ(ms[i].num_kernels(), is_relu ? 2 : 3);
    EXPECT_EQ(ms[i].select({41}), is_relu ? 1 : 2);
    EXPECT_LT(worst_error(ms[i], i), 1e-5) << "module " << i;
  }
  EXPECT_TRUE(runtime::Module::compile_all({}).empty());
}

// A module's kernels compile in parallel, and its dispatcher joins its kernels in the
// code cache: a second compile under the same cache compiles nothing. Modules compiled
// by several threads at once, cached or not, all compute right.
TEST_F(ModuleApiTest, SecondCompileUnderTheCodeCacheCompilesNothing) {
  if (codegen::program_build_id().empty()) GTEST_SKIP() << "this test binary has no build ID";
  const runtime::ModuleSpec spec = runtime::load_module_spec(path_);
  const std::string cache = (dir_ / "jit-cache").string();
  const int objects = int(spec.kernels.size()) + 1;  // and the dispatcher
  codegen::ObjectCacheStats before = codegen::object_cache_stats();
  {
    codegen::ObjectCacheScope scope(cache);
    runtime::Module::compile(spec);
  }
  codegen::ObjectCacheStats after = codegen::object_cache_stats();
  EXPECT_EQ(after.misses - before.misses, objects);
  EXPECT_EQ(after.hits, before.hits);

  std::vector<std::thread> threads;
  std::vector<double> worst(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::optional<codegen::ObjectCacheScope> scope;
      if (t % 2 == 0) scope.emplace(cache);
      worst[t] = worst_error(runtime::Module::compile(spec), t);
    });
  for (auto& th : threads) th.join();
  for (double e : worst) EXPECT_LT(e, 1e-5);
  after = codegen::object_cache_stats();
  // The two cached compiles read every object back; the two others never touch the cache.
  EXPECT_EQ(after.hits - before.hits, 2 * objects);
  EXPECT_EQ(after.misses - before.misses, objects);
  EXPECT_EQ(after.damaged, before.damaged);
}

// Under the code cache a module's kernels are found by their operator's spec and their
// schedule, without emitting them. A spec that differs in anything (the epilogue, N, the
// range of M) or a changed schedule finds no other's object: each compiles its own and
// computes its own operator. A damaged entry is detected and rebuilt.
TEST_F(ModuleApiTest, CachedKernelsAreFoundBySpecAndScheduleOnly) {
  if (codegen::program_build_id().empty()) GTEST_SKIP() << "this test binary has no build ID";
  const runtime::ModuleSpec base = runtime::load_module_spec(path_);
  const std::string cache = (dir_ / "jit-cache").string();
  const int64_t kernels = int64_t(base.kernels.size());
  auto compile = [&](const runtime::ModuleSpec& spec, int64_t want_hits, int64_t want_misses,
                     const std::string& what) {
    const codegen::ObjectCacheStats before = codegen::object_cache_stats();
    codegen::ObjectCacheScope scope(cache);
    runtime::Module m = runtime::Module::compile(spec);
    const codegen::ObjectCacheStats after = codegen::object_cache_stats();
    const int64_t hits = after.hits - before.hits, misses = after.misses - before.misses,
                  damaged = after.damaged - before.damaged;
    // Each object read once; the dispatcher's, under a key of its own, adds a hit or a miss.
    EXPECT_EQ(hits + misses + damaged, kernels + 1) << what;
    if (damaged == 0) {
      EXPECT_TRUE(hits == want_hits || hits == want_hits + 1) << what << ": " << hits << " hits";
      EXPECT_TRUE(misses == want_misses || misses == want_misses + 1)
          << what << ": " << misses << " misses";
    }
    EXPECT_LT(worst_error(m, 3), 1e-5) << what;
    return after.damaged - before.damaged;
  };
  compile(base, 0, kernels, "first compile");
  compile(base, kernels, 0, "the same spec again");
  runtime::ModuleSpec relu = base;
  relu.op.epilogue = "bias_relu";
  compile(relu, 0, kernels, "another epilogue");
  runtime::ModuleSpec wider = base;
  wider.op.n = 80;
  compile(wider, 0, kernels, "another N");
  runtime::ModuleSpec longer = base;
  longer.op.m_max = 128;
  compile(longer, 0, kernels, "another range of M");
  runtime::ModuleSpec changed = base;
  auto& k2 = std::get<schedule::MicroKernelSchedule>(changed.kernels[1]);
  k2.mr = k2.mr == 5 ? 4 : 5;
  compile(changed, kernels - 1, 1, "one schedule changed");
  // Damage every entry: each is detected, compiled again and rewritten.
  for (const auto& e : fs::directory_iterator(cache)) {
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(80);
    const char c = char(f.get() ^ 0xff);
    f.seekp(80);
    f.put(c);
  }
  EXPECT_GE(compile(base, 0, 0, "damaged entries"), kernels);
  compile(base, kernels, 0, "rewritten entries");
}

TEST_F(ModuleApiTest, BadCallsAreRefused) {
  Module m = Module::load(path_);
  auto in = weights_and_bias(m);
  auto packed = m.prepack(in[0].data(), int64_t(in[0].size()));
  std::vector<int64_t> s = m.buffer_sizes({8});
  std::vector<float> x(s[0]), y(s[3]);
  const std::vector<Input> good = {{x.data(), s[0]}, {in[0].data(), s[1]}, {in[1].data(), s[2]}};
  EXPECT_USER_ERROR(m.run({8}, {good[0], good[1]}, {y.data(), s[3]}, packed.get()),
                    "2 inputs given, expected 3");
  EXPECT_USER_ERROR(m.run({8}, good, {y.data(), s[3] - 1}, packed.get()),
                    "has 575 elements, expected 576");
  EXPECT_USER_ERROR(m.run({8}, {{nullptr, s[0]}, good[1], good[2]}, {y.data(), s[3]}, packed.get()),
                    "null pointer");
  const float* misaligned =
      reinterpret_cast<const float*>(reinterpret_cast<const char*>(x.data()) + 1);
  EXPECT_USER_ERROR(
      m.run({8}, {{misaligned, s[0]}, good[1], good[2]}, {y.data(), s[3]}, packed.get()),
      "not aligned");
  EXPECT_USER_ERROR(m.run({8}, good, {y.data(), s[3]}), "call Module::prepack");
  EXPECT_USER_ERROR(m.run({0}, good, {y.data(), s[3]}, packed.get()), "M");
  EXPECT_USER_ERROR(m.run({8, 2}, good, {y.data(), s[3]}, packed.get()), "shape");
  EXPECT_USER_ERROR(m.prepack(in[0].data(), s[1] - 3), "elements");
}

TEST_F(ModuleApiTest, BadFilesAreRefused) {
  EXPECT_USER_ERROR(Module::load((dir_ / "none.json").string()), "cannot open the module file");
  std::string text;
  {
    std::ifstream f(path_);
    text.assign(std::istreambuf_iterator<char>(f), {});
  }
  auto write = [&](const std::string& name, const std::string& content) {
    std::string p = (dir_ / name).string();
    std::ofstream(p) << content;
    return p;
  };
  EXPECT_USER_ERROR(Module::load(write("t.json", text.substr(0, text.size() / 2))),
                    "not a valid module file");
  std::string v2 = text;
  v2.replace(v2.find("\"version\": 1"), 12, "\"version\": 2");
  EXPECT_USER_ERROR(Module::load(write("v.json", v2)), "module format version 2 is not supported");
  std::string bad_kernel = text;
  bad_kernel.replace(bad_kernel.find("\"mr\": 5"), 7, "\"mr\": 0");
  EXPECT_USER_ERROR(Module::load(write("k.json", bad_kernel)), "kernels[1]: schedule: mr = 0");
}

TEST_F(ModuleApiTest, AnotherIsaIsRefusedOrRetargeted) {
  if (codegen::host_supports(schedule::Isa::Avx512)) {
    // Emulate the foreign module by retargeting this host's module to AVX2 and back
    // through the function the loader uses: every kernel must still be correct.
    runtime::ModuleSpec avx2 =
        runtime::retarget(hand_module(schedule::Isa::Avx512), schedule::Isa::Avx2);
    for (const auto& k : avx2.kernels)
      EXPECT_NO_THROW(schedule::validate(std::get<schedule::MicroKernelSchedule>(k)));
    std::string p = (dir_ / "avx2.json").string();
    runtime::save_module_spec(avx2, p);
    Module m = Module::load(p);
    auto in = weights_and_bias(m);
    auto packed = m.prepack(in[0].data(), int64_t(in[0].size()));
    for (int64_t M : {1, 5, 41, 100}) EXPECT_LT(check(m, avx2, M, packed.get(), in), 1e-5);
  } else {
    std::string p = (dir_ / "avx512.json").string();
    runtime::save_module_spec(hand_module(schedule::Isa::Avx512), p);
    EXPECT_USER_ERROR(Module::load(p), "which this CPU");
    LoadOptions o;
    o.retarget_to_host = true;
    Module m = Module::load(p, o);
    auto in = weights_and_bias(m);
    auto packed = m.prepack(in[0].data(), int64_t(in[0].size()));
    for (int64_t M : {1, 5, 41, 100})
      EXPECT_LT(check(m, runtime::retarget(hand_module(schedule::Isa::Avx512), schedule::Isa::Avx2),
                      M, packed.get(), in),
                1e-5);
  }
}

}  // namespace
}  // namespace dietcode
