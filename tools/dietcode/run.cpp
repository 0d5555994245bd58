// `dietcode run`: a tuned BERT encoder on one sequence. Loads the model directory's modules
// (JIT) and the weights, runs a seeded random input of T tokens, prints the latency
// (median of --repeat runs after one warm-up) and a checksum of the output; --check also
// compares the output with the float64 encoder (model/bert_reference.h). --against times a
// second model directory of the same encoder beside the first, call for call (below).
//
//   dietcode weights bert.safetensors --random --layers 2
//   dietcode run dietcode-out/bert-base --weights bert.safetensors --seq 37
//   dietcode run retuned --weights bert.safetensors --seq 37 --against dietcode-out/bert-base
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <random>

#include "model/bert_reference.h"
#include "model/model.h"
#include "reference/reference.h"
#include "runtime/thread_pool.h"
#include "support/error.h"
#include "support/stats.h"
#include "tools/dietcode/subcommands.h"

namespace dietcode::tool {

namespace {

struct RunOptions {
  std::string model_dir = "dietcode-out/bert-base";
  std::string weights;
  int64_t seq = 128;
  int64_t layers = 0;
  int threads = 1;
  int repeat = 10;
  uint64_t seed = 1;
  bool check = false;
  bool profile = false;
  std::string against;  // a second model directory, timed side by side
};

// One call; with `per_op`, each operator's seconds of it are added there (by description).
double timed_forward(const model::Model& m, const float* x, int64_t t, float* y,
                     std::map<std::string, double>* per_op) {
  auto start = std::chrono::steady_clock::now();
  if (!per_op) {
    m.forward(x, t, y);
  } else {
    std::vector<double> node_seconds;
    m.forward_profiled(x, t, y, node_seconds);
    for (size_t i = 0; i < node_seconds.size(); ++i)
      (*per_op)[m.graph().nodes()[i].op.describe()] += node_seconds[i];
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// --against: model B beside model A (the positional one), `repeat` pairs of calls.
int compare_models(const RunOptions& o, const model::Model& a, const std::vector<float>& x) {
  model::ModelOptions options;
  options.layers = o.layers;
  model::Model b = model::Model::load(o.against, o.weights, options);
  const model::BertConfig &ca = a.config(), &cb = b.config();
  if (ca.layers != cb.layers || ca.hidden != cb.hidden || ca.heads != cb.heads || ca.ffn != cb.ffn)
    user_error("--against {}: {} layers, hidden {}, {} heads, ffn {}; {} has {}, {}, {}, {}",
               o.against, cb.layers, cb.hidden, cb.heads, cb.ffn, o.model_dir, ca.layers, ca.hidden,
               ca.heads, ca.ffn);
  fmt::print("against {}:\n{}", o.against, b.describe());
  std::vector<float> ya(x.size()), yb(x.size());
  a.forward(x.data(), o.seq, ya.data());  // warm-up, one each
  b.forward(x.data(), o.seq, yb.data());
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < ya.size(); ++i) {
    max_diff = std::max(max_diff, double(std::abs(ya[i] - yb[i])));
    max_abs = std::max(max_abs, double(std::abs(ya[i])));
  }
  std::vector<double> ta, tb;
  std::vector<std::map<std::string, double>> ops_a(o.repeat), ops_b(o.repeat);
  time_in_pairs(
      o.repeat,
      [&](int r) {
        return timed_forward(a, x.data(), o.seq, ya.data(), o.profile ? &ops_a[r] : nullptr);
      },
      [&](int r) {
        return timed_forward(b, x.data(), o.seq, yb.data(), o.profile ? &ops_b[r] : nullptr);
      },
      ta, tb);
  auto median_ms = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return 1e3 * v[v.size() / 2];
  };
  const PairedRatio all = paired_ratio(ta, tb);
  fmt::print(
      "T = {}, {} thread{}, {} pairs of calls (ABBA): A {} median {:.3f} ms, B {} median {:.3f} "
      "ms\ntime B / A: {:.3f} (95% interval {:.3f} to {:.3f}; < 1: B faster); outputs differ "
      "by at most {:.1e} of the largest\n",
      o.seq, o.threads, o.threads == 1 ? "" : "s", o.repeat, o.model_dir, median_ms(ta), o.against,
      median_ms(tb), all.ratio, all.low, all.high, max_diff / std::max(max_abs, 1e-30));
  if (o.profile) {
    fmt::print("per operator, time B / A (95% interval), A's and B's mean ms per call:\n");
    for (const auto& [name, unused] : ops_a[0]) {
      std::vector<double> sa, sb;
      for (int r = 0; r < o.repeat; ++r) {
        sa.push_back(ops_a[r].at(name));
        sb.push_back(ops_b[r].at(name));
      }
      const PairedRatio p = paired_ratio(sa, sb);
      double mean_a = 0, mean_b = 0;
      for (int r = 0; r < o.repeat; ++r) {
        mean_a += 1e3 * sa[r] / o.repeat;
        mean_b += 1e3 * sb[r] / o.repeat;
      }
      fmt::print("  {:.3f} ({:.3f} to {:.3f})  {:>8.3f} {:>8.3f}  {}\n", p.ratio, p.low, p.high,
                 mean_a, mean_b, name);
    }
  }
  return 0;
}

int run_model(const RunOptions& o) {
  if (o.seq < 1) user_error("--seq {}: expected a sequence length >= 1", o.seq);
  if (o.threads < 1) user_error("--threads {}: expected >= 1", o.threads);
  if (o.repeat < 1) user_error("--repeat {}: expected >= 1", o.repeat);
  if (!o.against.empty() && o.check) user_error("--against and --check: one at a time");
  runtime::ThreadPool::global().set_num_threads(o.threads);
  model::ModelOptions options;
  options.layers = o.layers;
  model::Model m = model::Model::load(o.model_dir, o.weights, options);
  const model::BertConfig& c = m.config();
  fmt::print("model {}: {} layers, hidden {}, {} heads, ffn {}, tuned for T in {}..{}\n{}",
             o.model_dir, c.layers, c.hidden, c.heads, c.ffn, c.t_min, c.t_max, m.describe());
  fmt::print(
      "load: modules {:.2f} s (read + JIT, kernels and dispatchers: {} from the code cache, {} "
      "compiled), "
      "weights {:.2f} s (map + pack)\n",
      m.load_times().modules_seconds, m.load_times().kernels_from_cache,
      m.load_times().kernels_compiled, m.load_times().weights_seconds);

  std::mt19937_64 rng(o.seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(o.seq * c.hidden), y(x.size());
  for (float& e : x) e = dist(rng);
  if (!o.against.empty()) return compare_models(o, m, x);
  std::vector<double> times;
  for (int r = 0; r <= o.repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    m.forward(x.data(), o.seq, y.data());
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r > 0) times.push_back(s);  // the first call warms caches and pages
  }
  std::sort(times.begin(), times.end());
  const model::Model::Memory mem = m.memory();
  fmt::print(
      "memory: weights packed {:.1f} MB (the file mapped beside), workspace {:.2f} MB "
      "(T <= {})\n",
      1e-6 * double(mem.weight_bytes), 1e-6 * double(mem.workspace_bytes), mem.t_capacity);
  // The sum of squares: the plain sum of LayerNorm's rows is near zero, all rounding.
  double checksum = 0;
  for (float e : y) checksum += double(e) * e;
  const double median = times[times.size() / 2];
  fmt::print(
      "T = {}, {} thread{}: median {:.3f} ms over {} runs (best {:.3f}, worst {:.3f}), "
      "{:.1f} GFLOP/s; checksum (sum of squares) {:.9e}\n",
      o.seq, o.threads, o.threads == 1 ? "" : "s", 1e3 * median, times.size(), 1e3 * times.front(),
      1e3 * times.back(), 1e-9 * m.graph().flops(o.seq) / median, checksum);
  if (o.profile) {  // seconds per operator of the model, over --repeat more runs
    std::vector<double> node_seconds;
    for (int r = 0; r < o.repeat; ++r) m.forward_profiled(x.data(), o.seq, y.data(), node_seconds);
    std::map<std::string, double> per_op;
    double total = 0;
    for (size_t i = 0; i < node_seconds.size(); ++i) {
      const ops::OperatorSpec& op = m.graph().nodes()[i].op;
      per_op[op.describe()] += node_seconds[i] / o.repeat;
      total += node_seconds[i] / o.repeat;
    }
    fmt::print("profile (mean per forward over {} runs):\n", o.repeat);
    for (const auto& [name, s] : per_op)
      fmt::print("  {:>8.3f} ms {:>5.1f}%  {}\n", 1e3 * s, 100 * s / total, name);
  }
  if (o.check) {
    model::Safetensors w = model::Safetensors::open(o.weights);
    double err = reference::relative_error(y.data(), model::bert_reference(w, c, x.data(), o.seq));
    fmt::print("check: relative error {:.2e} against the float64 encoder\n", err);
    if (!(err <= 1e-4)) {
      fmt::print("check FAILED (tolerance 1e-4)\n");
      return 1;
    }
  }
  return 0;
}

}  // namespace

void register_run(CLI::App& app, Action& action) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd =
      app.add_subcommand("run", "run a tuned BERT encoder on a random sequence of --seq tokens");
  cmd->add_option("model_dir", o->model_dir, "model directory (dietcode tune bert-base --out)")
      ->capture_default_str();
  cmd->add_option("--weights", o->weights,
                  "safetensors weights with BERT checkpoint names (dietcode weights --random)")
      ->required();
  cmd->add_option("--seq", o->seq, "sequence length T (any T >= 1)")->capture_default_str();
  cmd->add_option("--layers", o->layers, "run the first N layers (0: all in the weights)")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "threads")->capture_default_str();
  cmd->add_option("--repeat", o->repeat, "timed runs after one warm-up")->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed of the random input")->capture_default_str();
  cmd->add_flag("--check", o->check, "compare the output with the float64 encoder");
  cmd->add_flag("--profile", o->profile, "time each operator of the model");
  cmd->add_option("--against", o->against,
                  "a second model directory of the same encoder, timed beside this one in pairs "
                  "of calls: the time ratio with its 95% interval (with --profile, per operator)");
  cmd->callback([&action, o] { action = [o] { return run_model(*o); }; });
}

}  // namespace dietcode::tool
