// The model runtime: a BERT encoder built as a graph of operators, its memory plan, and
// Model::forward against the float64 reference of the whole encoder (model/bert_reference.h)
// for T in 1..200 (past the tuned range), fresh random weights with nonzero biases, outputs
// poisoned; modules of two kernels each (a dispatch split) so that several kernels of
// every operator run; several threads at once; every bad wiring, file and argument refused.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <new>
#include <random>
#include <thread>

#include "codegen/llvm/target.h"
#include "dietcode/dietcode.h"
#include "model/bert_reference.h"
#include "model/model.h"
#include "reference/reference.h"
#include "runtime/module.h"
#include "runtime/thread_pool.h"
#include "schedule/attention_schedule.h"
#include "schedule/random_schedule.h"
#include "schedule/row_schedule.h"
#include "test_support.h"
#include "workflow/refine_model.h"

using namespace dietcode;
using model::kT;

#include "count_allocations.h"

namespace {

namespace fs = std::filesystem;

// Float32 through several layers of float32 kernels (K up to 3072, LayerNorm's rsqrt):
// errors of a few 1e-6 per layer relative to the output's norm.
constexpr double kTolerance = 2e-5;

fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("dietcode_bert_" + std::to_string(::getpid()) + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

// Weights with every tensor random: weights normal(0, 0.05), biases and LayerNorm beta
// normal(0, 0.1), gamma 1 + normal(0, 0.1) (the checkpoint generator's biases are zero).
void write_weights(const std::string& path, const model::BertConfig& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<model::NamedTensor> tensors;
  for (const auto& [name, shape] :
       model::bert_tensor_shapes({c.layers, c.hidden, c.heads, c.ffn})) {
    model::NamedTensor t{name, shape, {}};
    int64_t size = 1;
    for (int64_t d : shape) size *= d;
    const bool bias = name.ends_with(".bias");
    const bool gamma = name.find("LayerNorm.weight") != std::string::npos;
    for (int64_t i = 0; i < size; ++i)
      t.data.push_back(gamma ? 1.0f + 0.1f * n(rng) : (bias ? 0.1f : 0.05f) * n(rng));
    tensors.push_back(std::move(t));
  }
  model::write_safetensors(path, tensors);
}

// How the dense modules of write_modules read their weights.
enum class DenseWeights { Any, Prepacked, UnpackedQkv };

// A model directory: for each operator a module of two random kernels, the first for
// T <= split. Dense kernels are redrawn until they read their weights as `weights` asks:
// every one pre-packed, or qkv's first kernel not pre-packed.
void write_modules(const fs::path& dir, const model::BertConfig& c, uint64_t seed, int64_t split,
                   DenseWeights weights = DenseWeights::Any) {
  std::mt19937_64 rng(seed);
  auto wanted = [&](const std::string& name, int i, const schedule::MicroKernelSchedule& s) {
    const bool prepacked = s.pack_b == schedule::PackB::Prepacked;
    if (weights == DenseWeights::Prepacked) return prepacked;
    if (weights == DenseWeights::UnpackedQkv && name == "qkv" && i == 0) return !prepacked;
    return true;
  };
  const schedule::Isa isa = codegen::host_target().isa;
  for (const model::NamedOperator& o : model::bert_operators(c)) {
    runtime::ModuleSpec m;
    m.op = o.op;
    m.isa = isa;
    te::Operator op = o.op.build();
    for (int i = 0; i < 2; ++i) {
      switch (schedule::kind_of_operator(o.op)) {
        case schedule::Kind::Contraction: {
          schedule::MicroKernelSchedule s = schedule::random_schedule(rng, isa, op);
          while (!wanted(o.name, i, s)) s = schedule::random_schedule(rng, isa, op);
          m.kernels.push_back(s);
          break;
        }
        case schedule::Kind::Row:
          m.kernels.push_back(schedule::random_row_schedule(rng, isa));
          break;
        case schedule::Kind::Attention:
          m.kernels.push_back(schedule::random_attention_schedule(rng, isa));
          break;
      }
    }
    std::vector<std::vector<int64_t>> shapes;
    std::vector<int> labels;
    for (int64_t t = c.t_min; t <= c.t_max; ++t) {
      shapes.push_back({t});
      labels.push_back(t <= split ? 0 : 1);
    }
    m.dispatch = dispatch::DecisionTree::fit(shapes, labels);
    runtime::save_module_spec(m, (dir / (o.name + ".module.json")).string());
  }
}

std::vector<float> random_input(int64_t elements, std::mt19937_64& rng) {
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> x(elements);
  for (float& e : x) e = n(rng);
  return x;
}

// The model's output at T against float64, output poisoned.
double forward_error(const model::Model& m, const model::Safetensors& w, int64_t t,
                     std::mt19937_64& rng) {
  const int64_t h = m.config().hidden;
  std::vector<float> x = random_input(t * h, rng);
  std::vector<float> y(t * h, std::numeric_limits<float>::quiet_NaN());
  m.forward(x.data(), t, y.data());
  return reference::relative_error(y.data(), model::bert_reference(w, m.config(), x.data(), t));
}

model::BertConfig small_config() {
  model::BertConfig c;
  c.layers = 2;
  c.hidden = 64;
  c.heads = 4;
  c.ffn = 136;  // not a multiple of the vector width or of common tiles
  c.t_max = 128;
  return c;
}

// A model directory in a temporary folder (removed with the object): modules of two
// kernels each (the first for T <= split) and random weights in weights.safetensors.
struct TestModel {
  fs::path dir;
  std::string weights;
  TestModel(const std::string& name, const model::BertConfig& c, uint64_t modules_seed,
            uint64_t weights_seed, int64_t split, DenseWeights dense = DenseWeights::Any)
      : dir(temp_dir(name)), weights((dir / "weights.safetensors").string()) {
    write_modules(dir, c, modules_seed, split, dense);
    write_weights(weights, c, weights_seed);
  }
  ~TestModel() { fs::remove_all(dir); }
};

}  // namespace

TEST(ModelGraph, BertEncoderWiringAndMemoryPlan) {
  model::BertConfig c;
  c.layers = 2;
  model::Graph g = model::bert_encoder(c);
  EXPECT_EQ(g.nodes().size(), 14u);
  EXPECT_EQ(g.tensor(g.output()).shape, (std::vector<int64_t>{kT, 768}));
  // FLOPs: the four products and attention's two, per layer.
  const double t = 64, h = 768, f = 3072;
  EXPECT_DOUBLE_EQ(g.flops(64), 2 * (2 * t * (3 * h * h + h * h + 2 * h * f) + 4 * t * t * h));

  model::MemoryPlan plan = model::plan_memory(g, 128);
  // Activations live from their node to their last reader never overlap in memory.
  std::vector<int> first(g.tensors().size(), -1), last(g.tensors().size(), -1);
  for (int s = 0; s < int(g.nodes().size()); ++s) {
    first[g.nodes()[s].output] = s;
    last[g.nodes()[s].output] = std::max(last[g.nodes()[s].output], s);
    for (int id : g.nodes()[s].inputs) last[id] = s;
  }
  int64_t sum = 0;
  for (int a = 0; a < int(g.tensors().size()); ++a) {
    if (plan.offset[a] < 0) continue;
    EXPECT_EQ(plan.offset[a] % 16, 0);
    const int64_t a_end = plan.offset[a] + g.tensor(a).elements(128);
    EXPECT_LE(a_end, plan.elements);
    sum += g.tensor(a).elements(128);
    for (int b = a + 1; b < int(g.tensors().size()); ++b) {
      if (plan.offset[b] < 0) continue;
      const bool live_together = first[a] <= last[b] && first[b] <= last[a];
      const bool overlap =
          plan.offset[a] < plan.offset[b] + g.tensor(b).elements(128) && plan.offset[b] < a_end;
      EXPECT_FALSE(live_together && overlap) << g.tensor(a).name << " and " << g.tensor(b).name;
    }
  }
  EXPECT_EQ(plan.offset[g.output()], -1);
  // Reuse: the workspace is a fraction of all activations (FFN's [T, 3072] dominates).
  EXPECT_LT(plan.elements, sum / 3);
  EXPECT_LE(plan.elements, 128 * (3072 + 2304 + 768 + 16 * 3));
}

TEST(ModelGraph, BadWiringIsRefused) {
  model::BertConfig c;
  std::vector<model::NamedOperator> ops = model::bert_operators(c);
  model::Graph g;
  int x = g.input("x", {kT, 768});
  int w = g.weight("w", {2304, 768});
  int b = g.weight("b", {2304});
  EXPECT_USER_ERROR(g.add("qkv", ops[0].op, {x, w}, {kT, 2304}), "takes 3 inputs; 2 given");
  EXPECT_USER_ERROR(g.add("qkv", ops[0].op, {x, w, b}, {kT, 768}),
                    "output is tensor 'qkv.out' [T, 768] of 768 elements at T = 1; the "
                    "operator expects 2304");
  EXPECT_USER_ERROR(g.add("qkv", ops[0].op, {w, w, b}, {kT, 2304}),
                    "input X is tensor 'w' [2304, 768]");
  int w2 = g.weight("w2", {768, 768});
  EXPECT_USER_ERROR(
      g.add("out", ops[2].op, {x, w2, g.weight("b2", {768}), g.weight("r", {1, 768})}, {kT, 768}),
      "input residual is tensor 'r' [1, 768] of 768 elements at T = 2");
  EXPECT_USER_ERROR(g.weight("w", {3}), "tensor 'w' is declared twice");
  EXPECT_USER_ERROR(g.weight("v", {kT, 3}), "weights cannot depend on T");
  EXPECT_USER_ERROR(g.input("z", {0, 3}), "expected positive extents or T");
  g.add("qkv", ops[0].op, {x, w, b}, {kT, 2304});
  EXPECT_USER_ERROR(g.set_output(x), "the output must be a node's result");
  EXPECT_USER_ERROR(model::plan_memory(g, 0), "capacity T = 0");
  c.eps = 0;
  EXPECT_USER_ERROR(model::bert_operators(c), "eps 0");
}

TEST(ModelWeights, EveryPrepackingKernelOfAModuleSharesOnePackedCopy) {
  // Three prepacking kernels: 1 differs from 0 in unroll, 2 in its tile width and k-block.
  // Pre-packed weights are laid out in panels one vector wide over all of K, whatever the
  // tile and blocking: the module packs them once.
  ops::OperatorSpec op;
  op.op = "dense";
  op.n = 40;
  op.k = 24;
  op.epilogue = "bias";
  op.m_min = 1;
  op.m_max = 30;
  runtime::ModuleSpec m;
  m.op = op;
  m.isa = codegen::host_target().isa;
  schedule::MicroKernelSchedule a;
  a.isa = m.isa;
  a.mr = 2;
  a.nr = 16;
  a.kc = 24;
  a.mc = 4;
  a.nc = 32;
  a.pack_b = schedule::PackB::Prepacked;
  schedule::MicroKernelSchedule b = a, c = a;
  b.unroll_k = a.unroll_k == 1 ? 2 : 1;
  c.kc = 8;
  c.nr = 32;
  m.kernels = {a, b, c};
  m.dispatch = dispatch::DecisionTree::fit({{1}, {10}, {20}}, {0, 1, 2});
  runtime::Module module = runtime::Module::compile(m);
  te::Operator built = op.build();
  std::mt19937_64 rng(14);
  std::vector<float> w = random_input(40 * 24, rng), bias = random_input(40, rng);
  runtime::PackedWeights packed = module.prepack({1}, {w.data(), int64_t(w.size())});
  ASSERT_EQ(packed.per_kernel.size(), 3u);
  ASSERT_NE(packed.per_kernel[0], nullptr);
  EXPECT_EQ(packed.per_kernel[0], packed.per_kernel[1]);
  EXPECT_EQ(packed.per_kernel[0], packed.per_kernel[2]);
  EXPECT_EQ(packed.bytes(), 4 * packed.per_kernel[0]->size());
  for (int64_t t : {1, 9, 10, 19, 20, 30}) {  // every kernel runs, on the shared copy
    std::vector<float> x = random_input(t * 24, rng), y(t * 40, NAN);
    module.run({t},
               {{x.data(), int64_t(x.size())}, {w.data(), int64_t(w.size())}, {bias.data(), 40}},
               {y.data(), int64_t(y.size())}, &packed);
    std::vector<double> want = reference::evaluate(built, {t}, {x.data(), w.data(), bias.data()});
    EXPECT_LE(reference::relative_error(y.data(), want), 1e-6) << "T = " << t;
  }
}

TEST(ModelWeights, StackedQkvIsFreedWhereEveryKernelReadsItPacked) {
  // The model holds its packed weights, the stacked Q K V bias, and the stacked Q K V
  // weight only where a kernel of qkv reads it unpacked.
  model::BertConfig c = small_config();
  const int64_t h = c.hidden;
  for (DenseWeights dense : {DenseWeights::Prepacked, DenseWeights::UnpackedQkv}) {
    TestModel tm("stacked", c, 21, 22, 40, dense);
    int64_t packed = 0;  // one layer's packed dense weights, as each module packs them
    for (const model::NamedOperator& o : model::bert_operators(c)) {
      if (o.op.op != "dense") continue;
      runtime::Module module = runtime::Module::compile(
          runtime::load_module_spec((tm.dir / (o.name + ".module.json")).string()));
      std::vector<float> w(o.op.n * o.op.k, 1.0f);
      packed += module.prepack({1}, {w.data(), int64_t(w.size())}).bytes();
    }
    model::Model m = model::Model::load(tm.dir.string(), tm.weights);
    const int64_t stacked = 4 * 3 * h * (dense == DenseWeights::Prepacked ? 1 : h + 1);
    EXPECT_EQ(m.memory().weight_bytes, c.layers * (packed + stacked));
    model::Safetensors w = model::Safetensors::open(tm.weights);
    std::mt19937_64 rng(23);
    for (int64_t t : {1, 7, 40, 41, 128, 131})
      EXPECT_LE(forward_error(m, w, t, rng), kTolerance) << "T = " << t;
  }
}

TEST(Model, EncoderMatchesFloat64AtEveryLength) {
  model::BertConfig c = small_config();
  TestModel tm("small", c, 1, 2, 24);
  const fs::path& dir = tm.dir;
  const std::string& weights = tm.weights;
  model::Safetensors w = model::Safetensors::open(weights);
  std::mt19937_64 rng(3);
  for (int64_t layers : {1, 2}) {
    model::ModelOptions options;
    options.layers = layers;
    model::Model m = model::Model::load(dir.string(), weights, options);
    EXPECT_EQ(m.config().layers, layers);
    EXPECT_EQ(m.config().heads, 4);
    double worst = 0;
    for (int64_t t : {1, 2, 13, 24, 25, 64, 127, 128, 200, 300}) {
      double err = forward_error(m, w, t, rng);
      worst = std::max(worst, std::isnan(err) ? 1.0 : err);
      EXPECT_LE(err, kTolerance) << layers << " layers, T = " << t;
    }
    std::printf("[ measured ] %lld layers: worst relative error %.2e\n", (long long)layers, worst);
  }
}

TEST(Model, BertBaseLayerMatchesFloat64) {
  // The real sizes (hidden 768, 12 heads of 64, FFN 3072), one layer.
  model::BertConfig c;
  c.layers = 1;
  TestModel tm("base", c, 4, 5, 16);
  const fs::path& dir = tm.dir;
  const std::string& weights = tm.weights;
  model::Safetensors w = model::Safetensors::open(weights);
  model::Model m = model::Model::load(dir.string(), weights);
  std::mt19937_64 rng(6);
  for (int64_t t : {1, 2, 13, 64})
    EXPECT_LE(forward_error(m, w, t, rng), kTolerance) << "T = " << t;
}

TEST(Model, ForwardChoosingRunsTheChosenKernel) {
  // Every kernel of every module, chosen in place of the dispatch at lengths on both sides
  // of its split, matches float64; choosing the kernel the dispatch selects gives forward's
  // output bit for bit; an unknown module or kernel is refused by name.
  model::BertConfig c = small_config();
  TestModel tm("choose", c, 11, 12, 24);
  model::Safetensors w = model::Safetensors::open(tm.weights);
  model::Model m = model::Model::load(tm.dir.string(), tm.weights);
  std::mt19937_64 rng(13);
  std::vector<double> seconds;
  for (const std::string& name : m.module_names()) {
    for (int k = 0; k < m.module(name).num_kernels(); ++k) {
      for (int64_t t : {3, 40}) {
        std::vector<float> x = random_input(t * c.hidden, rng);
        std::vector<float> y(x.size(), std::numeric_limits<float>::quiet_NaN()), z(x.size());
        m.forward_choosing(x.data(), t, y.data(), {{name, k}}, seconds);
        EXPECT_LE(reference::relative_error(y.data(), model::bert_reference(w, c, x.data(), t)),
                  kTolerance)
            << name << " kernel " << k << ", T = " << t;
        if (m.module(name).select({t}) == k) {
          m.forward(x.data(), t, z.data());
          EXPECT_EQ(0, std::memcmp(y.data(), z.data(), 4 * y.size())) << name << ", T = " << t;
        }
      }
    }
  }
  std::vector<float> x(c.hidden), y(c.hidden);
  EXPECT_USER_ERROR(m.forward_choosing(x.data(), 1, y.data(), {{"ffn3", 0}}, seconds),
                    "no module ffn3");
  EXPECT_USER_ERROR(m.forward_choosing(x.data(), 1, y.data(), {{"qkv", 2}}, seconds),
                    "kernel 2 asked for; it has 2");
}

TEST(Refine, MovesTheLengthsAroundAProbeThatTheOldKernelServed) {
  // Lengths 1..12 served by kernels 0 0 0 1 1 1 1 2 2 2 2 2, probes at 2, 5, 10.
  const std::vector<int> labels = {0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2};
  const std::vector<int64_t> probes = {2, 5, 10};
  // A move at 5 (kernel 1 -> 2): the lengths from past the midpoint to 2 (4) to the midpoint
  // to 10 (7) that kernel 1 served: 4..7.
  EXPECT_EQ(workflow::apply_moves(labels, 1, probes, {{5, 2}}),
            (std::vector<int>{0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2}));
  // At the first and last probes the range runs to the ends; only kernel 0's lengths move.
  EXPECT_EQ(workflow::apply_moves(labels, 1, probes, {{2, 3}, {10, 0}}),
            (std::vector<int>{3, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(workflow::apply_moves(labels, 1, probes, {}), labels);
  EXPECT_USER_ERROR(workflow::apply_moves(labels, 1, probes, {{6, 0}}), "probe 6");
}

TEST(Refine, RewritesOnlyTheDispatchAndTheModelStaysCorrect) {
  // Refinement on a small model at two threads: whatever it moves (timings decide), the
  // rewritten modules hold the same kernels, every moved length dispatches to its new
  // kernel and every other length to its old one, the old files are kept, and the model
  // still matches float64.
  model::BertConfig c = small_config();
  c.t_max = 32;
  TestModel tm("refine", c, 21, 22, 12);
  std::map<std::string, runtime::ModuleSpec> before;
  for (const std::string name : {"qkv", "out", "ffn1", "ffn2"})
    before[name] = runtime::load_module_spec((tm.dir / (name + ".module.json")).string());
  workflow::RefineOptions o;
  o.model_dir = tm.dir.string();
  o.weights = tm.weights;
  o.threads = 2;
  o.lengths = {4, 12, 13, 30};
  o.pairs = 6;
  o.screen_pairs = 2;
  o.accept_below = 1.0;  // any kernel faster with confidence: moves are likely
  o.quiet = true;
  workflow::RefineResult r = workflow::refine_model(o);
  runtime::ThreadPool::global().set_num_threads(1);
  EXPECT_GT(r.comparisons, 0);
  // A comparison ruled out after its screening pairs timed no more.
  EXPECT_EQ(r.pairs, 2 * r.screened_out + 6 * (r.comparisons - r.screened_out));
  // The model's load is reported: every kernel of its six modules and each module's
  // dispatcher, compiled or found in the code cache.
  int64_t kernels = 0;
  for (const std::string name : {"qkv", "attention", "out", "ln", "ffn1", "ffn2"})
    kernels += int64_t(
        runtime::load_module_spec((tm.dir / (name + ".module.json")).string()).kernels.size());
  EXPECT_EQ(r.load.kernels_compiled + r.load.kernels_from_cache, kernels + 6);
  EXPECT_GT(r.load.modules_seconds, 0);
  std::printf("[ measured ] %d comparisons, %zu moves, %zu files\n", r.comparisons,
              r.changes.size(), r.written.size());
  for (const auto& [name, old] : before) {
    const fs::path path = tm.dir / (name + ".module.json");
    runtime::ModuleSpec now = runtime::load_module_spec(path.string());
    ASSERT_EQ(now.kernels.size(), old.kernels.size()) << name;
    for (size_t k = 0; k < old.kernels.size(); ++k)
      EXPECT_EQ(schedule::to_json(now.kernels[k]), schedule::to_json(old.kernels[k])) << name;
    bool moved = false;
    for (int64_t t = c.t_min; t <= c.t_max; ++t) {
      const int was = old.dispatch.select({t});
      int expected = was, covering = 0;
      for (const workflow::RefineChange& ch : r.changes)
        if (ch.module == name && ch.first <= t && t <= ch.last) {
          ++covering;
          if (was == ch.from) {
            expected = ch.to;
            moved = true;
          }
        }
      EXPECT_LE(covering, 1) << name << ", T = " << t << ": moves overlap";
      EXPECT_EQ(now.dispatch.select({t}), expected) << name << ", T = " << t;
    }
    EXPECT_EQ(fs::exists(path.string() + ".before-refine"), moved) << name;
  }
  model::Safetensors w = model::Safetensors::open(tm.weights);
  model::Model m = model::Model::load(tm.dir.string(), tm.weights);
  std::mt19937_64 rng(23);
  for (int64_t t : {1, 4, 12, 13, 30, 32, 40}) EXPECT_LE(forward_error(m, w, t, rng), kTolerance);
}

TEST(Refine, ScreeningStopsTheComparisonsThatCannotPass) {
  // A threshold no kernel can meet (a time ratio below 0.01): after the four screening pairs
  // every comparison's interval lies above it, so each stops there and nothing moves.
  model::BertConfig c = small_config();
  c.t_max = 32;
  TestModel tm("screen", c, 24, 25, 12);
  workflow::RefineOptions o;
  o.model_dir = tm.dir.string();
  o.weights = tm.weights;
  o.lengths = {4, 13, 30};
  o.pairs = 10;
  o.screen_pairs = 4;
  o.accept_below = 0.01;
  o.dry_run = true;
  o.quiet = true;
  workflow::RefineResult r = workflow::refine_model(o);
  EXPECT_GT(r.comparisons, 0);
  EXPECT_EQ(r.screened_out, r.comparisons);
  EXPECT_EQ(r.pairs, 4 * r.comparisons);
  EXPECT_TRUE(r.changes.empty());
  o.screen_pairs = 3;  // odd: the pairs would not stay ABBA
  EXPECT_USER_ERROR(workflow::refine_model(o), "even count");
}

TEST(Model, ConcurrentCallsOfDifferentLengths) {
  model::BertConfig c = small_config();
  TestModel tm("threads", c, 7, 8, 40);
  const fs::path& dir = tm.dir;
  const std::string& weights = tm.weights;
  model::Safetensors w = model::Safetensors::open(weights);
  model::Model m = model::Model::load(dir.string(), weights);
  std::vector<double> errors(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      std::mt19937_64 rng(100 + i);
      double worst = 0;
      for (int64_t t : {int64_t(1 + 37 * i), int64_t(150 + i), int64_t(3 + i)})
        worst = std::max(worst, forward_error(m, w, t, rng));
      errors[i] = worst;
    });
  for (std::thread& t : threads) t.join();
  for (double e : errors) EXPECT_LE(e, kTolerance);
}

TEST(Model, ForwardAllocatesNothingOnceWarm) {
  if (!testing_alloc::counting_supported())
    GTEST_SKIP() << "operator new belongs to AddressSanitizer here";
  model::BertConfig c = small_config();
  TestModel tm("alloc", c, 12, 13, 20);
  const fs::path& dir = tm.dir;
  const std::string& weights = tm.weights;
  model::Model m = model::Model::load(dir.string(), weights);
  std::vector<float> x(400 * 64, 0.5f), y(x.size());
  m.forward(x.data(), 1, y.data());  // the first call creates the workspace
  const model::Model::Memory before = m.memory();
  EXPECT_EQ(before.t_capacity, 128);
  EXPECT_EQ(before.workspaces, 1);
  testing_alloc::start();
  for (int64_t t : {1, 2, 3, 17, 20, 21, 64, 127, 128, 5, 100}) m.forward(x.data(), t, y.data());
  EXPECT_EQ(testing_alloc::stop(), 0) << "operator new calls in forward";
  EXPECT_EQ(m.memory().workspace_bytes, before.workspace_bytes);
  // Past the plan's capacity the workspace grows once (to twice the capacity), then holds.
  m.forward(x.data(), 200, y.data());
  const model::Model::Memory grown = m.memory();
  EXPECT_EQ(grown.t_capacity, 256);
  EXPECT_EQ(grown.workspaces, 1);
  EXPECT_GT(grown.workspace_bytes, before.workspace_bytes);
  testing_alloc::start();
  for (int64_t t : {256, 1, 199, 130, 7}) m.forward(x.data(), t, y.data());
  EXPECT_EQ(testing_alloc::stop(), 0);
  EXPECT_EQ(m.memory().workspace_bytes, grown.workspace_bytes);
}

TEST(Model, PublicApiRunsTheEncoderAndChecksBuffers) {
  model::BertConfig c = small_config();
  TestModel tm("api", c, 15, 16, 30);
  const fs::path& dir = tm.dir;
  const std::string& weights = tm.weights;
  dietcode::ModelOptions options;
  options.layers = 1;
  // threads = 0: the modules' tuned count (1 here), whatever the pool had before.
  runtime::ThreadPool::global().set_num_threads(2);
  dietcode::Model m = dietcode::Model::load(dir.string(), weights, options);
  EXPECT_EQ(runtime::ThreadPool::global().num_threads(), 1);
  EXPECT_EQ(m.hidden(), 64);
  EXPECT_EQ(m.layers(), 1);
  EXPECT_NE(m.describe().find("1 layers, hidden 64, 4 heads, ffn 136"), std::string::npos)
      << m.describe();
  model::Safetensors w = model::Safetensors::open(weights);
  model::BertConfig one = c;
  one.layers = 1;
  std::mt19937_64 rng(17);
  for (int64_t t : {1, 31, 150}) {
    std::vector<float> x = random_input(t * 64, rng), y(t * 64, NAN);
    m.forward(t, {x.data(), t * 64}, {y.data(), t * 64});
    EXPECT_LE(reference::relative_error(y.data(), model::bert_reference(w, one, x.data(), t)),
              kTolerance);
  }
  std::vector<float> x(5 * 64), y(5 * 64);
  EXPECT_USER_ERROR(m.forward(5, {x.data(), 4 * 64}, {y.data(), 5 * 64}),
                    "input has 256 elements; expected seq_len x hidden = 5 x 64 = 320");
  EXPECT_USER_ERROR(m.forward(5, {x.data(), 5 * 64}, {nullptr, 5 * 64}),
                    "output has 320 elements (null)");
  EXPECT_USER_ERROR(m.forward(0, {x.data(), 0}, {y.data(), 0}), "sequence length 0");
}

TEST(Model, BadFilesAndArgumentsAreRefused) {
  model::BertConfig c = small_config();
  fs::path dir = temp_dir("bad");
  const std::string weights = (dir / "weights.safetensors").string();
  write_weights(weights, c, 9);
  EXPECT_USER_ERROR(model::Model::load((dir / "nothing").string(), weights),
                    "not a model directory");
  EXPECT_USER_ERROR(model::Model::load(dir.string(), weights), "qkv.module.json: missing");
  // Modules tuned for another size than the weights.
  model::BertConfig other = c;
  other.hidden = 96;
  write_modules(dir, other, 10, 8);
  EXPECT_USER_ERROR(model::Model::load(dir.string(), weights),
                    "qkv.module.json computes dense N=288 K=96");
  write_modules(dir, c, 11, 8);
  model::ModelOptions options;
  options.layers = 3;
  EXPECT_USER_ERROR(model::Model::load(dir.string(), weights, options), "3 layers asked for");
  EXPECT_USER_ERROR(model::Model::load(dir.string(), (dir / "none.safetensors").string()),
                    "none.safetensors");
  model::Model m = model::Model::load(dir.string(), weights);
  std::vector<float> x(64), y(64);
  EXPECT_USER_ERROR(m.forward(x.data(), 0, y.data()), "sequence length 0");
  fs::remove_all(dir);
}
