// The benchmark harness: one BenchRun per run_bench call, its phases in the order they
// run. Every implementation of a shape works on the same ProblemData (fresh inputs, rows
// checked against float64, output poisoned before each check).
#include "benchmark/harness.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>

#include "benchmark/interleave.h"
#include "benchmark/load_peers.h"
#include "benchmark/sweep.h"
#include "benchmark/workloads.h"
#include "codegen/llvm/target.h"
#include "ops/attention.h"
#include "reference/reference.h"
#include "runtime/buffer.h"
#include "runtime/kernel.h"
#include "runtime/thread_pool.h"
#include "support/error.h"

namespace dietcode::bench {

namespace {

using Clock = std::chrono::steady_clock;
// Every buffer handed to ours and to the peers starts on a cache line, as a framework's
// tensors do (and as the tuner's measurements are made).
using Floats = runtime::AlignedVector<float>;

double time_once(const std::function<void()>& fn) {
  auto start = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Sweeps the caches before a call that must meet its weights in memory (the cold-weights
// bench, one thread): reads a buffer several times the largest cache, which evicts whatever
// an implementation keeps, its own copies of the weights included (a peer's reordered
// weights are out of our reach otherwise), then reads the activations back in, as the
// layer before would have left them. At least kColdSweepBytes, for caches the guest does
// not see: on the Zen 5 VM (a hidden 32 MiB L3) a 9 MiB matrix read after a 64 MiB sweep
// ran at 66-71 GB/s, after 256 MiB at 45-46, after 512 MiB at 38-41, and 44.9 (median)
// from a ring of twenty copies, the tuner's protocol; a sweep costs ~6 ms a call.
// At most kMaxColdSweepBytes, for caches the guest sees but does not have to itself: the
// Intel VM reports its host's 480 MiB L3, and 4x that (1.9 GiB, 127 ms a call) made the
// cold product table of the main job take ten minutes; there a 9 MiB matrix read after a
// 256 MiB, 512 MiB, 1 GiB or 1.9 GiB sweep ran at the same 11.2-11.5 GB/s (median of 15).
constexpr int64_t kColdSweepBytes = int64_t{256} << 20;
constexpr int64_t kMaxColdSweepBytes = int64_t{512} << 20;

class CacheSweeper {
 public:
  explicit CacheSweeper(const Roofline& roofline) {
    int64_t largest = 0;
    for (const MemoryLevel& l : roofline.levels)
      if (l.name != "DRAM") largest = std::max(largest, l.capacity);
    const int64_t bytes = std::clamp(4 * largest, kColdSweepBytes, kMaxColdSweepBytes);
    buffer_.assign(size_t(bytes) / sizeof(float), 1.0f);
    auto start = Clock::now();
    sweep({});
    seconds_ = std::chrono::duration<double>(Clock::now() - start).count();
  }
  // Untimed work before each timed call.
  void sweep(const std::vector<std::pair<const float*, size_t>>& activations) const {
    float sum = 0;
    for (size_t i = 0; i < buffer_.size(); i += 16) sum += buffer_[i];  // a line each
    for (const auto& [p, n] : activations)
      for (size_t i = 0; i < n; i += 16) sum += p[i];
    volatile float sink = sum;
    (void)sink;
  }
  double seconds() const { return seconds_; }  // of one sweep

 private:
  runtime::AlignedVector<float> buffer_;
  double seconds_ = 0;
};

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// The data of one problem, shared by every implementation.
struct ProblemData {
  GemmProblem p;
  Floats a, b, c;
  std::vector<int64_t> check_rows;        // (batch, row) pairs flattened: batch * m + row
  std::vector<std::vector<double>> want;  // float64 rows

  ProblemData(const GemmProblem& problem, std::mt19937_64& rng) : p(problem) {
    std::uniform_real_distribution<float> dist(-1, 1);
    a.resize(p.batch * p.m * p.k);
    b.resize((p.b_shared ? 1 : p.batch) * p.n * p.k);
    c.resize(p.batch * p.m * p.n);
    for (float& v : a) v = dist(rng);
    for (float& v : b) v = dist(rng);
    // First and last rows of the first and last batch entries, and a few random rows.
    std::vector<int64_t> rows{0, p.m - 1, (p.batch - 1) * p.m, p.batch * p.m - 1};
    for (int i = 0; i < 4; ++i)
      rows.push_back(std::uniform_int_distribution<int64_t>(0, p.batch * p.m - 1)(rng));
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    check_rows = rows;
    for (int64_t r : rows) {
      int64_t bi = r / p.m, i = r % p.m;
      const float* ar = &a[(bi * p.m + i) * p.k];
      const float* bb = &b[(p.b_shared ? 0 : bi) * p.n * p.k];
      std::vector<double> row(p.n);
      for (int64_t j = 0; j < p.n; ++j) {
        double acc = 0;
        for (int64_t kk = 0; kk < p.k; ++kk)
          acc += double(ar[kk]) * (p.b_layout_nk ? bb[j * p.k + kk] : bb[kk * p.n + j]);
        row[j] = acc;
      }
      want.push_back(std::move(row));
    }
  }

  void poison() { std::fill(c.begin(), c.end(), std::numeric_limits<float>::quiet_NaN()); }
  // What a model's previous layer leaves in cache (with cold weights): A, unless B is
  // not shared (batched products have no weights).
  std::vector<std::pair<const float*, size_t>> activations() const {
    return {{a.data(), a.size()}};
  }
  bool has_weights() const { return p.b_shared; }

  // Largest relative error over the checked rows (infinite if any value is not finite).
  double error() const {
    double worst = 0;
    for (size_t r = 0; r < check_rows.size(); ++r) {
      const float* got = &c[check_rows[r] * p.n];
      double num = 0, den = 0;
      for (int64_t j = 0; j < p.n; ++j) {
        if (!std::isfinite(got[j])) return std::numeric_limits<double>::infinity();
        num += (got[j] - want[r][j]) * (got[j] - want[r][j]);
        den += want[r][j] * want[r][j];
      }
      worst = std::max(worst, std::sqrt(num / std::max(den, 1e-30)));
    }
    return worst;
  }
};

// Rows to check out of `rows`: the first, the last and `random` random ones, sorted.
std::vector<int64_t> pick_check_rows(int64_t rows, int random, std::mt19937_64& rng) {
  std::vector<int64_t> picked{0, rows - 1};
  for (int i = 0; i < random; ++i)
    picked.push_back(std::uniform_int_distribution<int64_t>(0, rows - 1)(rng));
  std::sort(picked.begin(), picked.end());
  picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
  return picked;
}

// Largest relative error (L2 over a row of n) of `out`'s checked rows against `want`
// (the checked rows in order, n values each); infinite if any output value is not
// finite (an element left unwritten shows as the poison).
double checked_rows_error(const Floats& out, const std::vector<int64_t>& rows,
                          const std::vector<double>& want, int64_t n) {
  for (float v : out)
    if (!std::isfinite(v)) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    double num = 0, den = 0;
    for (int64_t j = 0; j < n; ++j) {
      double got = out[rows[r] * n + j], w = want[r * n + j];
      num += (got - w) * (got - w);
      den += w * w;
    }
    worst = std::max(worst, std::sqrt(num / std::max(den, 1e-30)));
  }
  return worst;
}

// The elements of the checked rows, flattened (for reference::evaluate_at).
std::vector<int64_t> row_elements(const std::vector<int64_t>& rows, int64_t n) {
  std::vector<int64_t> flat;
  for (int64_t r : rows)
    for (int64_t j = 0; j < n; ++j) flat.push_back(r * n + j);
  return flat;
}

// The data of one row-operator problem: fresh inputs in the operator's order, the output,
// and float64 rows of the unscheduled operator (reference::evaluate_at) to check against.
struct RowData {
  RowProblem p;
  std::vector<Floats> inputs;
  Floats out;
  std::vector<int64_t> check_rows;
  std::vector<double> want;  // the check rows, in order, p.n values each
  double bytes = 0;          // every input read once, the output written once
  double written = 0;        // of which the output

  RowData(const WorkloadLayer& layer, int64_t t, std::mt19937_64& rng) : p(layer.row_problem(t)) {
    std::vector<int64_t> sizes = layer.op.buffer_sizes(layer.op.bind({t}));
    std::normal_distribution<float> dist(0, 1);
    for (size_t i = 0; i + 1 < sizes.size(); ++i) {
      inputs.emplace_back(sizes[i]);
      for (float& v : inputs.back()) v = dist(rng);
      bytes += 4.0 * double(sizes[i]);
    }
    out.resize(sizes.back());
    written = 4.0 * double(sizes.back());
    bytes += written;
    check_rows = pick_check_rows(p.rows, 6, rng);
    want = reference::evaluate_at(layer.op, {t}, pointers(), row_elements(check_rows, p.n));
  }

  std::vector<const float*> pointers() const {
    std::vector<const float*> ptrs;
    for (const auto& in : inputs) ptrs.push_back(in.data());
    return ptrs;
  }
  void poison() { std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN()); }

  double error() const { return checked_rows_error(out, check_rows, want, p.n); }
};

// The data of one fused-attention problem: Q, K, V (normal(0, 1)), the output, and the
// composition's buffers: Q times the scale (1/8 for a head size of 64: exact, a power of
// two, so the composition's plain products see the same scores; made outside the
// timing), the scores and the probabilities, batch x T x T each. Checked rows: (head,
// query row) pairs, against reference::evaluate_at of the unscheduled operator.
struct AttentionData {
  int64_t t, heads, d;
  bool packed;  // ours reads `qkv` and writes `out` as [T, heads, d] (WorkloadLayer::packed_qkv)
  Floats q, k, v, qkv, out, q_scaled, scores, probs;
  std::vector<int64_t> check_rows;  // rows of d in our output's layout
  std::vector<double> want;         // the check rows, in order, d values each

  AttentionData(const WorkloadLayer& layer, int64_t t_, std::mt19937_64& rng)
      : t(t_), heads(layer.batch), d(layer.k), packed(layer.packed_qkv) {
    std::normal_distribution<float> dist(0, 1);
    for (auto* x : {&q, &k, &v}) {
      x->resize(heads * t * d);
      for (float& e : *x) e = dist(rng);
    }
    if (packed) {  // qkv[i][which][h][j] = {q, k, v}[which][h][i][j]
      qkv.resize(3 * heads * t * d);
      const Floats* parts[] = {&q, &k, &v};
      for (int64_t i = 0; i < t; ++i)
        for (int64_t which = 0; which < 3; ++which)
          for (int64_t h = 0; h < heads; ++h)
            std::copy_n(parts[which]->data() + (h * t + i) * d, d,
                        qkv.data() + ((i * 3 + which) * heads + h) * d);
    }
    out.resize(heads * t * d);
    const float scale = float(ops::match_attention(layer.op).scale);
    q_scaled = q;
    for (float& e : q_scaled) e *= scale;
    scores.resize(heads * t * t);
    probs.resize(heads * t * t);
    check_rows = pick_check_rows(heads * t, 6, rng);
    want = packed ? reference::evaluate_at(layer.op, {t}, {qkv.data()}, row_elements(check_rows, d))
                  : reference::evaluate_at(layer.op, {t}, {q.data(), k.data(), v.data()},
                                           row_elements(check_rows, d));
  }

  std::vector<runtime::ConstTensor> our_inputs() const {
    if (packed) return {{qkv.data(), int64_t(qkv.size())}};
    return {{q.data(), int64_t(q.size())},
            {k.data(), int64_t(k.size())},
            {v.data(), int64_t(v.size())}};
  }

  void poison() {
    std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
    std::fill(scores.begin(), scores.end(), std::numeric_limits<float>::quiet_NaN());
    std::fill(probs.begin(), probs.end(), std::numeric_limits<float>::quiet_NaN());
  }

  // Ours: `out` in the operator's layout.
  double error() const { return checked_rows_error(out, check_rows, want, d); }
  // The peers' composition: `out` as [heads, T, d]; with packed inputs our row i * heads + h
  // is its row h * T + i.
  double composition_error() const {
    if (!packed) return error();
    std::vector<int64_t> rows;
    for (int64_t r : check_rows) rows.push_back((r % heads) * t + r / heads);
    return checked_rows_error(out, rows, want, d);
  }
};

// The data of a dense layer with a fused epilogue: the operator's inputs (X, W, then the
// epilogue's: bias, residual) uniform in [-1, 1], the output, the composition's product
// buffer, and float64 rows of the unscheduled operator to check against.
struct EpilogueData {
  GemmProblem p;
  RowProblem pass;
  std::vector<Floats> inputs;
  Floats out, product;
  std::vector<int64_t> check_rows;
  std::vector<double> want;
  double bytes = 0;  // every input read once, the output written once
  std::vector<std::pair<const float*, size_t>> hot;  // the inputs that are not constant

  EpilogueData(const WorkloadLayer& layer, int64_t t, std::mt19937_64& rng)
      : p(layer.problem(t)), pass(layer.epilogue_problem(t)) {
    std::vector<int64_t> sizes = layer.op.buffer_sizes(layer.op.bind({t}));
    std::uniform_real_distribution<float> dist(-1, 1);
    for (size_t i = 0; i + 1 < sizes.size(); ++i) {
      inputs.emplace_back(sizes[i]);
      for (float& v : inputs.back()) v = dist(rng);
    }
    for (int64_t size : sizes) bytes += 4.0 * double(size);
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!layer.op.inputs[i].constant) hot.push_back({inputs[i].data(), inputs[i].size()});
    out.resize(sizes.back());
    product.resize(sizes.back());
    check_rows = pick_check_rows(pass.rows, 4, rng);
    std::vector<const float*> ptrs;
    for (const auto& in : inputs) ptrs.push_back(in.data());
    want = reference::evaluate_at(layer.op, {t}, ptrs, row_elements(check_rows, p.n));
  }

  void poison() {
    std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
    std::fill(product.begin(), product.end(), std::numeric_limits<float>::quiet_NaN());
  }
  double error() const { return checked_rows_error(out, check_rows, want, p.n); }
  std::vector<std::pair<const float*, size_t>> activations() const { return hot; }
  bool has_weights() const { return true; }
};

constexpr double kTolerance = 1e-5;

struct Candidate {
  std::string impl, variant;
  std::function<void()> run;
  double error = 0, screen = 0;
  // Its relative error after a run, where it writes its output in a layout of its own (the
  // peers' attention on separate Q, K, V); empty: the data's error().
  std::function<double()> check = {};
};

// Interleaved rounds of warm bursts, and how often a disturbed shape is measured again.
constexpr int kRounds = 5, kAttempts = 3;
// Rounds of one attempt that disagree by more than this factor were disturbed.
constexpr double kDisturbedSpread = 1.25;

// A compiled sweep (or given) kernel with its weights, pre-packed for the current problem.
struct OurKernel {
  runtime::Kernel kernel;
  runtime::AlignedBuffer packed;
};

// A tuned module, compiled once, run through its dispatcher.
struct OurModule {
  std::string impl;
  runtime::Module module;
  runtime::PackedWeights packed;
};

// Our implementations of one layer.
struct OurCandidates {
  std::vector<OurModule> modules;
  std::vector<OurKernel> kernels;
  bool empty() const { return modules.empty() && kernels.empty(); }
};

// The timings of the best variant of each implementation on one shape.
struct ShapeTimings {
  std::map<std::string, std::vector<double>> times;  // impl -> every timed call
  double spread = 1e30;  // largest ratio between one implementation's round medians
};

class BenchRun {
 public:
  explicit BenchRun(const BenchOptions& o) : o_(o) {}

  BenchResult run() {
    check_options();
    Workload w = resolve_layers();
    prepare_machine();
    for (const WorkloadLayer& layer : w.layers) {
      OurCandidates ours = build_our_candidates(layer);
      if (ours.empty() && !run_sweep()) continue;  // no module computes this layer
      for (size_t ti = 0; ti < o_.t_values.size(); ++ti) {
        measure_shape(layer, ours, ti);
        if (!o_.quiet)
          fmt::print(stderr, "\r{}: T={} ({}/{})   ", layer.name, o_.t_values[ti], ti + 1,
                     o_.t_values.size());
      }
      if (!o_.quiet) fmt::print(stderr, "\n");
    }
    probe_peak_again();
    return std::move(result_);
  }

 private:
  void note(const std::string& s) {
    result_.notes.push_back(s);
    if (!o_.quiet) fmt::print(stderr, "note: {}\n", s);
  }
  bool each_module() const { return o_.layers == LayerSource::kEachModule; }
  // The sweep (or the given kernels) runs unless only modules were asked for.
  bool run_sweep() const { return o_.modules.empty() || o_.sweep || !o_.kernels.empty(); }
  // The grid's name in the tables: "dietcode" alone, "dietcode-sweep" beside modules.
  std::string sweep_impl() const { return o_.modules.empty() ? "dietcode" : "dietcode-sweep"; }

  void check_options() const {
    if (o_.t_values.empty()) user_error("--M: empty list of sizes");
    if (o_.threads < 1) user_error("--threads {}: expected >= 1", o_.threads);
  }

  // Phase 1: the layers to measure, from the named workload or one per module.
  Workload resolve_layers() const {
    if (!each_module()) return make_workload(o_.workload, o_.t_values.back());
    if (o_.modules.empty()) user_error("--workload modules: no --module given");
    Workload w;
    w.name = "modules";
    for (const auto& [label, spec] : o_.modules)
      if (layer_of_module(label) == label) w.layers.push_back(layer_for_operator(label, spec.op));
    return w;
  }

  // With one layer per module, modules that compute the same operator (tuned with other
  // seeds or budgets, say) share one layer, named after the first of them, so that they
  // are measured side by side.
  std::string layer_of_module(const std::string& label) const {
    const ops::OperatorSpec* op = nullptr;
    for (const auto& [l, spec] : o_.modules)
      if (l == label) op = &spec.op;
    for (const auto& [l, spec] : o_.modules)
      if (spec.op.describe() == op->describe()) return l;
    return label;
  }

  // Phase 2: the roofline, the peers (threads set, pools started), this thread pinned.
  void prepare_machine() {
    runtime::ThreadPool::global().set_num_threads(o_.threads);
    runtime::ThreadPool::global().set_pinning(true);
    result_.roofline = measure_roofline(o_.threads, isa_);
    for (const auto& [label, spec] : o_.modules) result_.ours.push_back("dietcode-" + label);
    result_.ours.push_back(sweep_impl());
    if (!o_.quiet) fmt::print(stderr, "{}\n", result_.roofline.describe());
    // Cold at one thread only: between a sweep and the call it precedes the libraries'
    // worker threads fall asleep (a 2-thread main job's table put oneDNN at 0.4x of ours on
    // the 768x768 layer), which a model's back-to-back calls never let them do.
    if (o_.cold_weights && o_.threads == 1)
      sweeper_.emplace(result_.roofline);
    else if (o_.cold_weights)
      note(fmt::format(
          "--cold-weights is measured at one thread only; at {} threads the caches stay warm",
          o_.threads));

    if (o_.peers != std::vector<std::string>{"none"}) {
      try {
        loaded_ = load_peers(o_.peers_dir, o_.peers);
      } catch (const std::invalid_argument& e) {
        user_error("--peers: {}", e.what());
      }
    }
    for (const std::string& m : loaded_.missing) note("peer not available: " + m);
    for (auto& peer : loaded_.peers) {
      peer->set_threads(o_.threads);
      idle_spin_[peer->name()] = peer->idle_spin_seconds();
      max_idle_spin_ = std::max(max_idle_spin_, peer->idle_spin_seconds());
    }
    // A composition of peers (fused attention, a product and its epilogue pass) waits for
    // the slowest of them.
    idle_spin_["composition"] = max_idle_spin_;
    // Start every peer's thread pool (a small problem, once) with this thread's full CPU
    // mask, then pin this thread to the first CPU, beside our pinned workers: every
    // library is called from the same thread, and our workers cannot be woken onto its CPU.
    ProblemData warm(GemmProblem{1, 64, 64, 64, true, true}, rng_);
    for (auto& peer : loaded_.peers) {
      try {
        for (PeerVariant& v : peer->prepare(warm.p, warm.a.data(), warm.b.data(), warm.c.data()))
          v.run();
      } catch (const std::exception&) {
        // reported when the peer is used
      }
    }
    if (o_.threads > 1) runtime::ThreadPool::pin_caller_thread();
  }

  // Phase 3: our implementations of a layer, compiled once: the modules that compute it,
  // and the sweep grid (or the given kernels) validated for it.
  OurCandidates build_our_candidates(const WorkloadLayer& layer) {
    OurCandidates ours;
    for (const auto& [label, spec] : o_.modules) {
      bool matches =
          each_module() ? layer.name == layer_of_module(label) : layer_computes(layer, spec.op);
      if (!matches) {
        if (!each_module())
          note(fmt::format("module {} ({}) does not compute {}; skipped there", label,
                           spec.op.describe(), layer.name));
        continue;
      }
      if (spec.threads != o_.threads)
        note(fmt::format("module {} was tuned for {} threads, measured with {}", label,
                         spec.threads, o_.threads));
      ours.modules.push_back({"dietcode-" + label, runtime::Module::compile(spec), {}});
      for (int i = 0; i < ours.modules.back().module.num_kernels(); ++i)
        result_.compile_seconds.push_back(ours.modules.back().module.kernel(i).compile_seconds());
    }
    if (!run_sweep() && ours.modules.empty()) return ours;
    if (!run_sweep() && ours.modules.size() == 1) ours.modules[0].impl = "dietcode";
    if (layer.is_attention) {  // fused attention: the attention schedule grid
      if (!run_sweep()) return ours;
      for (const schedule::AttentionSchedule& s : attention_sweep_grid(isa_, o_.threads)) {
        OurKernel k{runtime::Kernel::compile(layer.op, s), {}};
        result_.compile_seconds.push_back(k.kernel.compile_seconds());
        ours.kernels.push_back(std::move(k));
      }
      if (!o_.kernels.empty()) note(fmt::format("--kernels: not used on {}", layer.name));
      std::vector<double> compile;
      for (const OurKernel& k : ours.kernels) compile.push_back(k.kernel.compile_seconds());
      std::sort(compile.begin(), compile.end());
      note(
          fmt::format("{}: JIT compile time per attention kernel: median {:.1f} ms (min {:.1f}, "
                      "max {:.1f}) over {}",
                      layer.name, 1e3 * compile[compile.size() / 2], 1e3 * compile.front(),
                      1e3 * compile.back(), compile.size()));
      return ours;
    }
    if (layer.is_row) {  // a row operator: the row schedule grid
      if (!run_sweep()) return ours;
      for (const schedule::RowSchedule& s : row_sweep_grid(isa_, o_.threads)) {
        OurKernel k{runtime::Kernel::compile(layer.op, s), {}};
        result_.compile_seconds.push_back(k.kernel.compile_seconds());
        ours.kernels.push_back(std::move(k));
      }
      if (!o_.kernels.empty()) note(fmt::format("--kernels: not used on {}", layer.name));
      if (!o_.quiet) fmt::print(stderr, "{}: {} row schedules\n", layer.name, ours.kernels.size());
      return ours;
    }
    // Constant weights are packed again for every problem (outside the timing), since
    // each problem has fresh data.
    std::vector<schedule::MicroKernelSchedule> schedules = o_.kernels;
    if (schedules.empty() && run_sweep())
      schedules = sweep_grid(layer.op, isa_, o_.threads, sweeper_.has_value());
    for (const schedule::MicroKernelSchedule& s : schedules) {
      std::optional<schedule::BoundSchedule> bound;
      try {
        bound = schedule::bind(s, layer.op);
      } catch (const Error& e) {
        note(fmt::format("kernel {} skipped on {}: {}", schedule::to_json_text(s), layer.name,
                         e.what()));
        continue;
      }
      OurKernel k{runtime::Kernel::compile(*bound), {}};
      result_.compile_seconds.push_back(k.kernel.compile_seconds());
      ours.kernels.push_back(std::move(k));
    }
    if (ours.empty()) {
      note(fmt::format("no valid micro-kernel for {}; only the peers are measured", layer.name));
    } else if (!o_.quiet) {
      fmt::print(stderr, "{}: {} micro-kernels, {} modules\n", layer.name, ours.kernels.size(),
                 ours.modules.size());
    }
    return ours;
  }

  // One shape of a layer: phases 4 to 8.
  void measure_shape(const WorkloadLayer& layer, OurCandidates& ours, size_t ti) {
    const int64_t t = o_.t_values[ti];
    if (layer.is_attention) {
      AttentionData data(layer, t, rng_);
      measure(layer, t, bind_attention_candidates(layer, ours, data, ti), data);
    } else if (layer.is_row) {
      RowData data(layer, t, rng_);
      measure(layer, t, bind_row_candidates(layer, ours, data, ti), data);
    } else if (layer.epilogue_pass) {
      EpilogueData data(layer, t, rng_);
      measure(layer, t, bind_epilogue_candidates(layer, ours, data, ti), data);
    } else {
      ProblemData data(layer.problem(t), rng_);
      measure(layer, t, bind_candidates(layer, ours, data, ti), data);
    }
  }

  template <typename Data>
  void measure(const WorkloadLayer& layer, int64_t t, std::vector<Candidate> candidates,
               Data& data) {
    // With cold weights, a layer that has weights has its caches swept before each call.
    cold_activations_.reset();
    if constexpr (requires { data.activations(); })
      if (sweeper_ && data.has_weights()) cold_activations_ = data.activations();
    check_and_screen(layer, t, candidates, data);
    std::map<std::string, Candidate*> best = best_variants(candidates);
    ShapeTimings timings = time_until_undisturbed(best);
    if (timings.spread >= kDisturbedSpread)
      note(fmt::format(
          "{} T={}: timings disturbed in all {} attempts (rounds differ by {:.0f}% in the "
          "best)",
          layer.name, t, kAttempts, 100 * (timings.spread - 1)));
    append_rows(layer, t, data, best, timings);
    cold_activations_.reset();
  }

  // One call's time; with cold weights, after the caches were swept (not timed).
  double timed(const std::function<void()>& fn) {
    if (cold()) sweeper_->sweep(*cold_activations_);
    return time_once(fn);
  }

  // Our kernels and modules of a contraction on `args` (the operator's inputs in order,
  // B second): weights packed for this shape where the kernel pre-packs them.
  void add_contraction_candidates(OurCandidates& ours,
                                  const std::vector<runtime::ConstTensor>& args, int64_t t,
                                  Floats& out, std::vector<Candidate>& candidates) {
    for (OurKernel& k : ours.kernels) {
      std::vector<runtime::ConstTensor> mine = args;
      if (k.kernel.needs_prepack()) {
        k.packed = k.kernel.prepack({t}, args[1]);
        mine[1] = {k.packed.data(), k.packed.size()};
      }
      runtime::Kernel* kernel = &k.kernel;
      candidates.push_back({sweep_impl(), schedule::to_json_text(k.kernel.schedule()),
                            [kernel, mine, shape = std::vector<int64_t>{t}, &out] {
                              kernel->run(shape, mine, {out.data(), int64_t(out.size())});
                            }});
    }
    for (OurModule& m : ours.modules) {
      m.packed = m.module.prepack({t}, args[1]);
      const runtime::Module* module = &m.module;
      const runtime::PackedWeights* packed = &m.packed;
      candidates.push_back({m.impl, fmt::format("kernel {}", m.module.select({t})),
                            [module, packed, args, shape = std::vector<int64_t>{t}, &out] {
                              module->run(shape, args, {out.data(), int64_t(out.size())}, packed);
                            }});
    }
  }

  // Phase 4: every implementation bound to this shape's data: ours (weights packed for
  // it) and every variant of every peer that supports the problem. Input order of the
  // operator: A (X) then B (W), as in the GEMM view.
  std::vector<Candidate> bind_candidates(const WorkloadLayer& layer, OurCandidates& ours,
                                         ProblemData& data, size_t ti) {
    const int64_t t = o_.t_values[ti];
    std::vector<Candidate> candidates;
    add_contraction_candidates(
        ours, {{data.a.data(), int64_t(data.a.size())}, {data.b.data(), int64_t(data.b.size())}}, t,
        data.c, candidates);
    for (auto& peer : loaded_.peers) {
      std::string why = peer->unsupported(data.p);
      if (!why.empty()) {
        if (ti == 0) note(fmt::format("{} on {}: {}", peer->name(), layer.name, why));
        continue;
      }
      try {
        for (PeerVariant& v : peer->prepare(data.p, data.a.data(), data.b.data(), data.c.data()))
          candidates.push_back({peer->name(), v.label, v.run});
      } catch (const std::exception& e) {
        note(fmt::format("{} on {} T={}: {}", peer->name(), layer.name, t, e.what()));
      }
    }
    return candidates;
  }

  // Modules of a row operator or of attention, called through their dispatchers (no
  // weights to pack).
  void add_module_candidates(OurCandidates& ours, const std::vector<runtime::ConstTensor>& args,
                             int64_t t, Floats& out, std::vector<Candidate>& candidates) {
    for (OurModule& m : ours.modules) {
      const runtime::Module* module = &m.module;
      candidates.push_back({m.impl, fmt::format("kernel {}", m.module.select({t})),
                            [module, args, shape = std::vector<int64_t>{t}, &out] {
                              module->run(shape, args, {out.data(), int64_t(out.size())});
                            }});
    }
  }

  // Phase 4 for a row operator: our row kernels and the peers that have row operators.
  std::vector<Candidate> bind_row_candidates(const WorkloadLayer& layer, OurCandidates& ours,
                                             RowData& data, size_t ti) {
    const int64_t t = o_.t_values[ti];
    std::vector<runtime::ConstTensor> args;
    for (const auto& in : data.inputs) args.push_back({in.data(), int64_t(in.size())});
    std::vector<Candidate> candidates;
    for (OurKernel& k : ours.kernels) {
      runtime::Kernel* kernel = &k.kernel;
      candidates.push_back({sweep_impl(), schedule::to_json_text(k.kernel.row_schedule()),
                            [kernel, args, shape = std::vector<int64_t>{t}, &data] {
                              kernel->run(shape, args, {data.out.data(), int64_t(data.out.size())});
                            }});
    }
    add_module_candidates(ours, args, t, data.out, candidates);
    for (auto& peer : loaded_.peers) {
      std::string why = peer->row_unsupported(data.p);
      if (!why.empty()) {  // said once per peer and reason, not per layer
        if (ti == 0 && row_notes_.insert(peer->name() + why).second)
          note(fmt::format("{} on the row operators (from {}): {}", peer->name(), layer.name, why));
        continue;
      }
      try {
        for (PeerVariant& v : peer->prepare_row(data.p, data.pointers(), data.out.data()))
          candidates.push_back({peer->name(), v.label, v.run});
      } catch (const std::exception& e) {
        note(fmt::format("{} on {} T={}: {}", peer->name(), layer.name, t, e.what()));
      }
    }
    return candidates;
  }

  // One stage of a composition of peers: per peer, its fastest variant (screened here:
  // best of 3, in order, on this shape's data); none for a peer that has no such stage
  // (`prepare` returns no variants).
  using PrepareStage = std::function<std::vector<PeerVariant>(Peer&)>;
  std::vector<Candidate> fastest_per_peer(const WorkloadLayer& layer, int64_t t, const char* stage,
                                          const PrepareStage& prepare) {
    std::vector<Candidate> best;
    for (auto& peer : loaded_.peers) {
      std::vector<PeerVariant> variants;
      try {
        variants = prepare(*peer);
      } catch (const std::exception& e) {
        note(fmt::format("{} on {} ({}) T={}: {}", peer->name(), layer.name, stage, t, e.what()));
      }
      std::optional<Candidate> mine;
      for (PeerVariant& v : variants) {
        v.run();
        double screen = 1e30;
        for (int r = 0; r < 3; ++r) screen = std::min(screen, timed(v.run));
        if (o_.threads > 1) settle(idle_spin_[peer->name()]);
        if (!mine || screen < mine->screen)
          mine = Candidate{peer->name(), fmt::format("{}[{}]", peer->name(), v.label), v.run, 0,
                           screen};
      }
      if (mine) best.push_back(*mine);
    }
    return best;
  }

  // Phase 4 for a dense layer with a fused epilogue: our kernels and modules (weights
  // packed for this shape), the peers that fuse such an epilogue themselves (oneDNN's
  // matmul with post-ops), and compositions of peers: each peer's fastest GEMM into a
  // buffer of its own, then each peer's fastest epilogue pass (oneDNN's binary add with
  // post-ops) from it into the output; every combination a variant of "composition".
  std::vector<Candidate> bind_epilogue_candidates(const WorkloadLayer& layer, OurCandidates& ours,
                                                  EpilogueData& data, size_t ti) {
    const int64_t t = o_.t_values[ti];
    std::vector<runtime::ConstTensor> args;
    for (const auto& in : data.inputs) args.push_back({in.data(), int64_t(in.size())});
    std::vector<Candidate> candidates;
    add_contraction_candidates(ours, args, t, data.out, candidates);
    // Peers that fuse the epilogue themselves (oneDNN's post-ops), under their own names.
    for (auto& peer : loaded_.peers) {
      try {
        std::vector<const float*> in;
        for (size_t i = 2; i < data.inputs.size(); ++i) in.push_back(data.inputs[i].data());
        for (PeerVariant& v : peer->prepare_fused(data.p, data.pass.op, data.inputs[0].data(),
                                                  data.inputs[1].data(), in, data.out.data()))
          candidates.push_back({peer->name(), v.label, v.run});
      } catch (const std::exception& e) {
        note(fmt::format("{} on {} (fused) T={}: {}", peer->name(), layer.name, t, e.what()));
      }
    }
    if (loaded_.peers.empty()) return candidates;
    std::vector<Candidate> gemm =
        fastest_per_peer(layer, t, "GEMM", [&](Peer& peer) -> std::vector<PeerVariant> {
          if (!peer.unsupported(data.p).empty()) return {};
          return peer.prepare(data.p, data.inputs[0].data(), data.inputs[1].data(),
                              data.product.data());
        });
    std::vector<Candidate> pass =
        fastest_per_peer(layer, t, "epilogue", [&](Peer& peer) -> std::vector<PeerVariant> {
          if (!peer.row_unsupported(data.pass).empty()) return {};
          std::vector<const float*> in{data.product.data()};
          for (size_t i = 2; i < data.inputs.size(); ++i) in.push_back(data.inputs[i].data());
          return peer.prepare_row(data.pass, in, data.out.data());
        });
    if (gemm.empty() || pass.empty()) {
      if (ti == 0)
        note(fmt::format("{}: no composition of peers (no peer computes {}); only ours measured",
                         layer.name, gemm.empty() ? "the product" : "the epilogue pass"));
      return candidates;
    }
    for (const Candidate& g : gemm)
      for (const Candidate& e : pass)
        candidates.push_back(
            {"composition", fmt::format("{} + {}", g.variant, e.variant), [g = g.run, e = e.run] {
               g();
               e();
             }});
    return candidates;
  }

  // Phase 4 for fused attention: our attention kernels, and compositions of peers: each
  // peer's fastest variant on Q K^T (scale folded into Q), on the softmax (the peers with
  // row operators) and on S V, each stage screened here (best of 3, in order, on this
  // shape's data); every combination of them, run back to back, is a variant of
  // "composition", the fastest kept (phase 5).
  std::vector<Candidate> bind_attention_candidates(const WorkloadLayer& layer, OurCandidates& ours,
                                                   AttentionData& data, size_t ti) {
    const int64_t t = o_.t_values[ti];
    const std::vector<runtime::ConstTensor> args = data.our_inputs();
    std::vector<Candidate> candidates;
    for (OurKernel& k : ours.kernels) {
      runtime::Kernel* kernel = &k.kernel;
      candidates.push_back({sweep_impl(), schedule::to_json_text(k.kernel.attention_schedule()),
                            [kernel, args, shape = std::vector<int64_t>{t}, &data] {
                              kernel->run(shape, args, {data.out.data(), int64_t(data.out.size())});
                            }});
    }
    add_module_candidates(ours, args, t, data.out, candidates);
    if (loaded_.peers.empty()) return candidates;
    const RowProblem softmax{RowOpKind::Softmax, layer.batch * t, t, 1e-5};
    auto fastest = [&](const char* stage, const PrepareStage& prepare) {
      return fastest_per_peer(layer, t, stage, prepare);
    };
    std::vector<Candidate> qk = fastest("Q K^T", [&](Peer& peer) -> std::vector<PeerVariant> {
      GemmProblem p = layer.qk_problem(t);
      if (!peer.unsupported(p).empty()) return {};
      return peer.prepare(p, data.q_scaled.data(), data.k.data(), data.scores.data());
    });
    std::vector<Candidate> sm = fastest("softmax", [&](Peer& peer) -> std::vector<PeerVariant> {
      if (!peer.row_unsupported(softmax).empty()) return {};
      return peer.prepare_row(softmax, {data.scores.data()}, data.probs.data());
    });
    std::vector<Candidate> sv = fastest("S V", [&](Peer& peer) -> std::vector<PeerVariant> {
      GemmProblem p = layer.sv_problem(t);
      if (!peer.unsupported(p).empty()) return {};
      return peer.prepare(p, data.probs.data(), data.v.data(), data.out.data());
    });
    if (qk.empty() || sm.empty() || sv.empty()) {
      if (ti == 0)
        note(fmt::format("{}: no composition of peers (no peer computes {}); only ours measured",
                         layer.name,
                         qk.empty()   ? "Q K^T"
                         : sm.empty() ? "the softmax"
                                      : "S V"));
      return candidates;
    }
    // Every combination of the peers' stages is a variant of "composition": screened as a
    // whole (phase 5), so that libraries whose thread pools fight when called back to back
    // (with several threads) are not composed by their times alone.
    for (const Candidate& a : qk)
      for (const Candidate& b : sm)
        for (const Candidate& c : sv)
          candidates.push_back({"composition",
                                fmt::format("{} + {} + {}", a.variant, b.variant, c.variant),
                                [qk = a.run, sm = b.run, sv = c.run] {
                                  qk();
                                  sm();
                                  sv();
                                }});
    // The composition writes [heads, T, d] whatever layout ours reads and writes.
    for (Candidate& c : candidates)
      if (c.impl == "composition") c.check = [&data] { return data.composition_error(); };
    return candidates;
  }

  // At several threads the bench sleeps before each burst (kWarmUpSecondsAfterIdle); at
  // one thread, with no sleeps, the single warm-up call is enough.
  double warm_up_seconds() const { return o_.threads > 1 ? kWarmUpSecondsAfterIdle : 0; }

  // Phase 5: each candidate checked once against float64 on a poisoned output (a wrong
  // one is excluded and reported), then screened (best of 3). Peers' workers from the
  // last shape must be idle first, or they would slow our screening.
  template <typename Data>
  void check_and_screen(const WorkloadLayer& layer, int64_t t, std::vector<Candidate>& candidates,
                        Data& data) {
    if (o_.threads > 1) settle(max_idle_spin_);
    for (Candidate& c : candidates) {
      data.poison();
      c.run();
      c.error = c.check ? c.check() : data.error();
      if (!(c.error <= kTolerance)) {
        note(fmt::format("WRONG RESULT: {} [{}] on {} T={}: relative error {:.3g}; excluded",
                         c.impl, c.variant, layer.name, t, c.error));
        c.screen = std::numeric_limits<double>::infinity();
        continue;
      }
      c.screen = 1e30;
      warm_up(c.run, warm_up_seconds());
      for (int r = 0; r < 3; ++r) c.screen = std::min(c.screen, timed(c.run));
      if (o_.threads > 1 && idle_spin_.count(c.impl)) settle(idle_spin_[c.impl]);
    }
  }

  // The fastest correct variant of each implementation.
  static std::map<std::string, Candidate*> best_variants(std::vector<Candidate>& candidates) {
    std::map<std::string, Candidate*> best;
    for (Candidate& c : candidates)
      if (std::isfinite(c.screen) && (!best.count(c.impl) || c.screen < best[c.impl]->screen))
        best[c.impl] = &c;
    return best;
  }

  // Phase 6: interleaved rounds of bursts, the implementations' order reversed every other
  // round (implementation_at, interleave.h). Each burst's first call, which reloads that
  // implementation's own weights into cache, is dropped (warm-cache timing); its other calls are
  // `bursts[impl]`.
  ShapeTimings time_interleaved(const std::map<std::string, Candidate*>& best,
                                const std::map<std::string, int>& bursts) {
    std::vector<std::pair<std::string, Candidate*>> order(best.begin(), best.end());
    ShapeTimings timings;
    std::map<std::string, std::vector<double>> round_medians;
    for (int round = 0; round < kRounds; ++round) {
      for (size_t i = 0; i < order.size(); ++i) {
        auto& [impl, c] = order[implementation_at(round, i, order.size())];
        warm_up(c->run, warm_up_seconds());
        std::vector<double> burst_times;
        for (int r = 0; r < bursts.at(impl); ++r) burst_times.push_back(timed(c->run));
        timings.times[impl].insert(timings.times[impl].end(), burst_times.begin(),
                                   burst_times.end());
        round_medians[impl].push_back(median(burst_times));
        if (o_.threads > 1)  // every library's spinning workers go idle before the next burst
          settle(max_idle_spin_);
      }
    }
    timings.spread = 1;
    for (auto& [impl, medians] : round_medians)
      timings.spread =
          std::max(timings.spread, *std::max_element(medians.begin(), medians.end()) /
                                       *std::min_element(medians.begin(), medians.end()));
    return timings;
  }

  // Phase 7: a neighbour on a shared machine that takes a core for a while shows as
  // rounds that disagree; the shape is measured again and the least disturbed attempt kept.
  // Every implementation's burst takes about the same time (calls_per_burst, interleave.h).
  ShapeTimings time_until_undisturbed(const std::map<std::string, Candidate*>& best) {
    std::map<std::string, int> bursts;
    for (auto& [impl, c] : best) {
      // A cold call costs its sweep too (untimed, but wall time all the same).
      const double per_call = c->screen + (cold() ? sweeper_->seconds() : 0.0);
      bursts[impl] = calls_per_burst(per_call, o_.seconds_per_measurement, kRounds);
    }
    ShapeTimings kept;
    for (int attempt = 1; attempt <= kAttempts; ++attempt) {
      ShapeTimings timings = time_interleaved(best, bursts);
      if (timings.spread < kept.spread) kept = std::move(timings);
      if (kept.spread < kDisturbedSpread) break;
    }
    return kept;
  }

  // Phase 8: one row per implementation: median time, GFLOP/s, the shape's roofline.
  void append_rows(const WorkloadLayer& layer, int64_t t, const ProblemData& data,
                   const std::map<std::string, Candidate*>& best, ShapeTimings& timings) {
    const GemmProblem& p = data.p;
    double flops = gemm_flops(p);
    double bytes = 4.0 * (data.a.size() + data.b.size() + data.c.size());
    add_rows(product_row(layer, t, p, flops, bytes), flops, best, timings,
             Roofline::memory_gflops(flops, bytes, product_level(bytes)));
  }

  // A row operator's rows: GB/s (its bytes moved once) against the rate of a loop that
  // streams as many inputs into one output over the same footprint (a write costs about
  // two reads: the read loop's rate is no ceiling for an operator that writes). M, N: rows
  // and row length; K: 0.
  void append_rows(const WorkloadLayer& layer, int64_t t, const RowData& data,
                   const std::map<std::string, Candidate*>& best, ShapeTimings& timings) {
    const Roofline& r = result_.roofline;
    const MemoryLevel level = r.stream_level(data.bytes - data.written, data.written);
    if (stream_notes_.insert(layer.name + " " + level.name).second)  // once per level
      note(
          fmt::format("{} T={}: roofline {:.1f} GB/s, a loop streaming its {:.3g} KiB read into "
                      "the {:.3g} KiB written; the read loop alone {:.1f} GB/s ({})",
                      layer.name, t, level.gbps, (data.bytes - data.written) / 1024,
                      data.written / 1024, r.level_for(data.bytes).gbps, level.name));
    add_rows({layer.name, "", "", o_.threads, t, data.p.rows, data.p.n, 0, 0, 0, level.gbps, 0,
              level.name, "GB/s"},
             data.bytes, best, timings);
  }

  // Fused attention's rows: GFLOP/s of 4 T^2 D per head against the roofline of those
  // FLOPs and of Q, K, V and O moved once. M, N, K: T, T, D. The composition's stages
  // are named in a note.
  void append_rows(const WorkloadLayer& layer, int64_t t, const AttentionData& data,
                   const std::map<std::string, Candidate*>& best, ShapeTimings& timings) {
    double flops = layer.attention_flops(t);
    double bytes = 4.0 * double(4 * data.heads * t * data.d);
    const MemoryLevel level = result_.roofline.level_for(bytes);
    add_rows({layer.name, "", "", o_.threads, t, t, t, data.d, 0, 0,
              result_.roofline.ceiling_gflops(flops, bytes, level), 0, level.name, "GFLOP/s"},
             flops, best, timings, Roofline::memory_gflops(flops, bytes, level));
    auto comp = best.find("composition");
    if (comp != best.end())
      note(fmt::format("{} T={}: composition = {}", layer.name, t, comp->second->variant));
  }

  // A dense layer with a fused epilogue: GFLOP/s of the product against its roofline with
  // every input and the output moved once; the composition's stages named in a note.
  void append_rows(const WorkloadLayer& layer, int64_t t, const EpilogueData& data,
                   const std::map<std::string, Candidate*>& best, ShapeTimings& timings) {
    const GemmProblem& p = data.p;
    double flops = gemm_flops(p);
    add_rows(product_row(layer, t, p, flops, data.bytes), flops, best, timings,
             Roofline::memory_gflops(flops, data.bytes, product_level(data.bytes)));
    auto comp = best.find("composition");
    if (comp != best.end())
      note(fmt::format("{} T={}: composition = {}", layer.name, t, comp->second->variant));
  }

  // A product's row before its timings: the roofline of `flops` and of `bytes` moved once
  // from the level that holds them (DRAM when timed with cold weights).
  Measurement product_row(const WorkloadLayer& layer, int64_t t, const GemmProblem& p, double flops,
                          double bytes) const {
    const Roofline& r = result_.roofline;
    const MemoryLevel level = product_level(bytes);
    Measurement m{layer.name,
                  "",
                  "",
                  o_.threads,
                  t,
                  p.m,
                  p.n,
                  p.k,
                  0,
                  0,
                  r.ceiling_gflops(flops, bytes, level),
                  0,
                  level.name,
                  "GFLOP/s"};
    m.cold_weights = cold();
    return m;
  }

  // The level a product's `bytes` come from: DRAM when timed with cold weights.
  MemoryLevel product_level(double bytes) const {
    const Roofline& r = result_.roofline;
    return cold() ? r.levels.back() : r.level_for(bytes);
  }

  // Phase 9: the FMA peak probed again after every timing, the faster rate kept and the
  // GFLOP/s rows' rooflines recomputed with it (apply_peak).
  void probe_peak_again() {
    Roofline& r = result_.roofline;
    const double before = r.peak_gflops;
    const double again = r.remeasure_peak();
    if (r.peak_gflops <= before) return;
    apply_peak(result_.rows, memory_gflops_, r.peak_gflops);
    note(fmt::format(
        "FMA peak probed again after the timings: {:.1f} GFLOP/s, above the {:.1f} of the "
        "probe at the start; the rooflines in GFLOP/s use it",
        again, before));
  }

  // `shape` with each implementation's time, rate (work / time / 1e9) and error.
  // `memory`: the memory term of a GFLOP/s roofline (apply_peak), infinite for GB/s rows.
  void add_rows(const Measurement& shape, double work,
                const std::map<std::string, Candidate*>& best, ShapeTimings& timings,
                double memory = std::numeric_limits<double>::infinity()) {
    for (auto& [impl, c] : best) {
      Measurement m = shape;
      m.impl = impl;
      m.variant = c->variant;
      m.seconds = median(timings.times[impl]);
      m.gflops = work / m.seconds * 1e-9;
      m.max_rel_err = c->error;
      m.disturbed = timings.spread >= kDisturbedSpread;
      result_.rows.push_back(m);
      memory_gflops_.push_back(memory);
    }
  }

  // Sleeps at least `seconds` (what a peer says its workers spin), then until the other
  // threads are measured idle (at most 1 s; a pool still busy then is noted once).
  void settle(double seconds) {
    if (!wait_for_idle_threads(seconds, 1.0).quiet && !busy_noted_) {
      busy_noted_ = true;
      note(
          "another thread of this process was still running 1 s after a burst (a library's "
          "workers that do not go idle); timings beside it share the cores");
    }
  }

  const BenchOptions& o_;
  const schedule::Isa isa_ = codegen::host_target().isa;
  BenchResult result_;
  LoadedPeers loaded_;
  std::set<std::string> row_notes_;          // peer + reason: row operators it skipped
  std::set<std::string> stream_notes_;       // layer + level: a row roofline's note given
  std::vector<double> memory_gflops_;        // per row of result_.rows (add_rows)
  std::map<std::string, double> idle_spin_;  // peer -> how long its workers spin
  double max_idle_spin_ = 0;
  bool busy_noted_ = false;
  std::optional<CacheSweeper> sweeper_;  // with cold weights
  // Set while the shape measured now is timed cold: what each sweep reads back in.
  std::optional<std::vector<std::pair<const float*, size_t>>> cold_activations_;
  bool cold() const { return cold_activations_.has_value(); }
  std::mt19937_64 rng_{2024};
};

}  // namespace

BenchResult run_bench(const BenchOptions& options) {
  return BenchRun(options).run();
}

void apply_peak(std::vector<Measurement>& rows, const std::vector<double>& memory_gflops,
                double peak) {
  if (memory_gflops.size() != rows.size())
    throw std::logic_error("apply_peak: a memory term per row expected");
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].unit == "GFLOP/s") rows[i].roofline_gflops = std::min(peak, memory_gflops[i]);
}

std::string default_peers_dir() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "peers" : (exe.parent_path() / "peers").string();
}

namespace {

// CPU time of every thread of this process but the caller, in ns. A thread's CPU clock is
// named by its TID (Linux: CPUCLOCK_SCHED of the thread, what pthread_getcpuclockid gives
// for a pthread_t); a thread that exits between listing and reading counts nothing.
int64_t other_threads_cpu_ns() {
  const pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
  int64_t total = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    pid_t tid = 0;
    try {
      tid = static_cast<pid_t>(std::stol(entry.path().filename().string()));
    } catch (const std::exception&) {
      continue;
    }
    if (tid == self) continue;
    const clockid_t clock = static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6);
    timespec ts{};
    if (clock_gettime(clock, &ts) == 0) total += int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }
  return total;
}

// CPU time of all of a process's threads, in ns; 0 if it cannot be read (exited).
int64_t process_cpu_ns(pid_t pid) {
  clockid_t clock;
  timespec ts{};
  if (clock_getcpuclockid(pid, &clock) != 0 || clock_gettime(clock, &ts) != 0) return 0;
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

IdleWait wait_for_idle_threads(double min_seconds, double max_seconds,
                               const std::vector<pid_t>& children) {
  constexpr auto kInterval = std::chrono::milliseconds(5);
  constexpr int64_t kQuietNs = 250'000;  // 5% of the interval
  const auto start = Clock::now();
  auto waited = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  auto cpu_ns = [&] {
    int64_t total = other_threads_cpu_ns();
    for (pid_t child : children) total += process_cpu_ns(child);
    return total;
  };
  int quiet_intervals = 0;
  int64_t before = cpu_ns();
  while (true) {
    std::this_thread::sleep_for(kInterval);
    const int64_t after = cpu_ns();
    quiet_intervals = after - before < kQuietNs ? quiet_intervals + 1 : 0;
    before = after;
    const double w = waited();
    if (quiet_intervals >= 2 && w >= min_seconds) return {w, true};
    if (w >= max_seconds) return {w, false};
  }
}

void warm_up(const std::function<void()>& fn, double seconds) {
  auto start = Clock::now();
  do fn();
  while (std::chrono::duration<double>(Clock::now() - start).count() < seconds);
}

}  // namespace dietcode::bench
