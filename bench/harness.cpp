#include "bench/harness.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <thread>

#include "bench/sweep.h"
#include "bench/workloads.h"
#include "codegen/llvm/target.h"
#include "runtime/kernel.h"
#include "runtime/thread_pool.h"
#include "support/error.h"

namespace dietcode::bench {

namespace {

using Clock = std::chrono::steady_clock;

double time_once(const std::function<void()>& fn) {
  auto start = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// The data of one problem, shared by every implementation.
struct ProblemData {
  GemmProblem p;
  std::vector<float> a, b, c;
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

constexpr double kTolerance = 1e-5;

struct Candidate {
  std::string impl, variant;
  std::function<void()> run;
  double error = 0, screen = 0;
};

// A compiled sweep kernel with its weights, pre-packed for the current problem.
struct OurKernel {
  runtime::Kernel kernel;
  runtime::AlignedBuffer packed;
};

}  // namespace

BenchResult run_bench(const BenchOptions& o) {
  if (o.t_values.empty()) user_error("--M: empty list of sizes");
  if (o.threads < 1) user_error("--threads {}: expected >= 1", o.threads);
  // "modules": one layer per module, computing its operator.
  Workload w;
  if (o.workload == "modules") {
    if (o.modules.empty()) user_error("--workload modules: no --module given");
    w.name = "modules";
    for (const auto& [label, spec] : o.modules)
      w.layers.push_back(layer_for_operator(label, spec.op));
  } else {
    w = make_workload(o.workload, o.t_values.back());
  }
  const schedule::Isa isa = codegen::host_target().isa;
  BenchResult result;
  auto note = [&](const std::string& s) {
    result.notes.push_back(s);
    if (!o.quiet) fmt::print(stderr, "note: {}\n", s);
  };

  runtime::ThreadPool::global().set_num_threads(o.threads);
  runtime::ThreadPool::global().set_pinning(true);
  result.roofline = measure_roofline(o.threads, isa);
  if (!o.quiet) fmt::print(stderr, "{}\n", result.roofline.describe());

  LoadedPeers loaded;
  if (o.peers != std::vector<std::string>{"none"}) {
    try {
      loaded = load_peers(o.peers_dir, o.peers);
    } catch (const std::invalid_argument& e) {
      user_error("--peers: {}", e.what());
    }
  }
  for (const std::string& m : loaded.missing) note("peer not available: " + m);
  std::map<std::string, double> idle_spin;
  double max_idle_spin = 0;
  for (auto& peer : loaded.peers) {
    peer->set_threads(o.threads);
    idle_spin[peer->name()] = peer->idle_spin_seconds();
    max_idle_spin = std::max(max_idle_spin, peer->idle_spin_seconds());
  }

  // Start every peer's thread pool (a small problem, once) with this thread's full CPU
  // mask, then pin this thread to the first CPU, beside our pinned workers: every library
  // is called from the same thread, and our workers cannot be woken onto its CPU.
  std::mt19937_64 rng(2024);
  {
    ProblemData warm(GemmProblem{1, 64, 64, 64, true, true}, rng);
    for (auto& peer : loaded.peers) {
      try {
        for (PeerVariant& v : peer->prepare(warm.p, warm.a.data(), warm.b.data(), warm.c.data()))
          v.run();
      } catch (const std::exception&) {
        // reported when the peer is used
      }
    }
  }
  if (o.threads > 1) runtime::ThreadPool::pin_caller_thread();
  // Modules, compiled once, each on the layers its operator matches.
  struct OurModule {
    std::string impl;
    runtime::Module module;
    runtime::PackedWeights packed;
  };
  std::vector<std::pair<const runtime::ModuleSpec*, std::string>> module_specs;
  for (const auto& [label, spec] : o.modules) module_specs.push_back({&spec, label});
  const bool run_sweep = o.modules.empty() || o.sweep || !o.kernels.empty();
  const std::string sweep_impl = o.modules.empty() ? "dietcode" : "dietcode-sweep";
  for (const WorkloadLayer& layer : w.layers) {
    std::vector<OurModule> modules;
    for (const auto& [spec, label] : module_specs) {
      const ops::OperatorSpec& ms = spec->op;
      bool matches = o.workload == "modules" ? layer.name == label : layer_computes(layer, ms);
      if (!matches) {
        if (o.workload == "modules") continue;
        note(fmt::format("module {} ({}) does not compute {}; skipped there", label,
                         ms.describe(), layer.name));
        continue;
      }
      if (spec->threads != o.threads)
        note(fmt::format("module {} was tuned for {} threads, measured with {}", label,
                         spec->threads, o.threads));
      modules.push_back({"dietcode-" + label, runtime::Module::compile(*spec), {}});
      for (int i = 0; i < modules.back().module.num_kernels(); ++i)
        result.compile_seconds.push_back(modules.back().module.kernel(i).compile_seconds());
    }
    if (!run_sweep && modules.empty()) continue;  // no module computes this layer
    if (!run_sweep && modules.size() == 1) modules[0].impl = "dietcode";
    // Our kernels: the sweep grid, compiled once per layer. Constant weights are packed
    // again for every problem (outside the timing), since each problem has fresh data.
    std::vector<OurKernel> ours;
    std::vector<schedule::MicroKernelSchedule> schedules = o.kernels;
    if (schedules.empty() && run_sweep) schedules = sweep_grid(layer.op, isa, o.threads);
    for (const schedule::MicroKernelSchedule& s : schedules) {
      try {
        schedule::bind(s, layer.op);
      } catch (const Error& e) {
        note(fmt::format("kernel {} skipped on {}: {}", schedule::to_json_text(s), layer.name,
                         e.what()));
        continue;
      }
      OurKernel k{runtime::Kernel::compile(layer.op, s), {}};
      result.compile_seconds.push_back(k.kernel.compile_seconds());
      ours.push_back(std::move(k));
    }
    if (ours.empty() && modules.empty()) {
      note(fmt::format("no valid micro-kernel for {}; only the peers are measured", layer.name));
    } else if (!o.quiet) {
      fmt::print(stderr, "{}: {} micro-kernels, {} modules\n", layer.name, ours.size(),
                 modules.size());
    }
    for (size_t ti = 0; ti < o.t_values.size(); ++ti) {
      int64_t t = o.t_values[ti];
      GemmProblem p = layer.problem(t);
      ProblemData data(p, rng);
      std::vector<Candidate> candidates;
      // Ours. Input order of the operator: A (X) then B (W), as in the GEMM view.
      for (OurKernel& k : ours) {
        std::vector<runtime::ConstTensor> args{{data.a.data(), int64_t(data.a.size())},
                                               {data.b.data(), int64_t(data.b.size())}};
        if (k.kernel.needs_prepack()) {
          k.packed = k.kernel.prepack({t}, args[1]);
          args[1] = {k.packed.data(), k.packed.size()};
        }
        runtime::Kernel* kernel = &k.kernel;
        candidates.push_back(
            {sweep_impl, schedule::to_json_text(k.kernel.schedule()), [kernel, args, t, &data] {
               kernel->run({t}, args, {data.c.data(), int64_t(data.c.size())});
             }});
      }
      for (OurModule& m : modules) {
        std::vector<runtime::ConstTensor> args{{data.a.data(), int64_t(data.a.size())},
                                               {data.b.data(), int64_t(data.b.size())}};
        m.packed = m.module.prepack({t}, args[1]);
        const runtime::Module* module = &m.module;
        const runtime::PackedWeights* packed = &m.packed;
        candidates.push_back(
            {m.impl,
             fmt::format("kernel {}", m.module.select({t})),
             [module, packed, args, t, &data] {
               module->run({t}, args, {data.c.data(), int64_t(data.c.size())}, packed);
             }});
      }
      // Peers.
      for (auto& peer : loaded.peers) {
        std::string why = peer->unsupported(p);
        if (!why.empty()) {
          if (ti == 0) note(fmt::format("{} on {}: {}", peer->name(), layer.name, why));
          continue;
        }
        try {
          for (PeerVariant& v : peer->prepare(p, data.a.data(), data.b.data(), data.c.data()))
            candidates.push_back({peer->name(), v.label, v.run});
        } catch (const std::exception& e) {
          note(fmt::format("{} on {} T={}: {}", peer->name(), layer.name, t, e.what()));
        }
      }
      // Check each candidate once on a poisoned output, then screen (best of 3). Peers'
      // workers from the last shape must be idle first, or they would slow our screening.
      if (o.threads > 1) std::this_thread::sleep_for(std::chrono::duration<double>(max_idle_spin));
      for (Candidate& c : candidates) {
        data.poison();
        c.run();
        c.error = data.error();
        if (!(c.error <= kTolerance)) {
          note(fmt::format("WRONG RESULT: {} [{}] on {} T={}: relative error {:.3g}; excluded",
                           c.impl, c.variant, layer.name, t, c.error));
          c.screen = std::numeric_limits<double>::infinity();
          continue;
        }
        c.screen = 1e30;
        for (int r = 0; r < 3; ++r) c.screen = std::min(c.screen, time_once(c.run));
        if (o.threads > 1 && idle_spin.count(c.impl))
          std::this_thread::sleep_for(std::chrono::duration<double>(idle_spin[c.impl]));
      }
      // The best variant of each implementation, then interleaved timed repetitions.
      std::map<std::string, Candidate*> best;
      for (Candidate& c : candidates)
        if (std::isfinite(c.screen) && (!best.count(c.impl) || c.screen < best[c.impl]->screen))
          best[c.impl] = &c;
      double slowest = 0;
      for (auto& [impl, c] : best) slowest = std::max(slowest, c->screen);
      // Interleaved rounds of short bursts: every implementation sees the same machine
      // drift (rounds alternate), and each burst's first call, which reloads that
      // implementation's own weights into cache, is dropped (warm-cache timing).
      constexpr int kRounds = 5, kAttempts = 3;
      int burst = static_cast<int>(
          std::clamp(o.seconds_per_measurement / kRounds / std::max(slowest, 1e-7), 2.0, 40.0));
      std::map<std::string, std::vector<double>> times;
      double best_spread = 1e30;
      for (int attempt = 1; attempt <= kAttempts; ++attempt) {
        std::map<std::string, std::vector<double>> attempt_times, round_medians;
        for (int round = 0; round < kRounds; ++round)
          for (auto& [impl, c] : best) {
            c->run();
            std::vector<double> burst_times;
            for (int r = 0; r < burst; ++r) burst_times.push_back(time_once(c->run));
            attempt_times[impl].insert(attempt_times[impl].end(), burst_times.begin(),
                                       burst_times.end());
            round_medians[impl].push_back(median(burst_times));
            if (o.threads > 1)  // every library's spinning workers go idle before the next burst
              std::this_thread::sleep_for(std::chrono::duration<double>(max_idle_spin));
          }
        // A neighbour on this shared machine that takes a core for a while shows as rounds
        // that disagree; measure the shape again and keep the least disturbed attempt.
        double spread = 1;
        for (auto& [impl, medians] : round_medians)
          spread = std::max(spread, *std::max_element(medians.begin(), medians.end()) /
                                        *std::min_element(medians.begin(), medians.end()));
        if (spread < best_spread) {
          best_spread = spread;
          times = std::move(attempt_times);
        }
        if (best_spread < 1.25) break;
      }
      if (best_spread >= 1.25)
        note(fmt::format(
            "{} T={}: timings disturbed in all {} attempts (rounds differ by {:.0f}% in the "
            "best)",
            layer.name, t, kAttempts, 100 * (best_spread - 1)));
      double flops = gemm_flops(p);
      double bytes = 4.0 * (data.a.size() + data.b.size() + data.c.size());
      const MemoryLevel& level = result.roofline.level_for(bytes);
      for (auto& [impl, c] : best) {
        Measurement m{layer.name,
                      impl,
                      c->variant,
                      o.threads,
                      t,
                      p.m,
                      p.n,
                      p.k,
                      median(times[impl]),
                      0,
                      result.roofline.ceiling_gflops(flops, bytes),
                      c->error,
                      level.name};
        m.gflops = flops / m.seconds * 1e-9;
        result.rows.push_back(m);
      }
      if (!o.quiet)
        fmt::print(stderr, "\r{}: T={} ({}/{})   ", layer.name, t, ti + 1, o.t_values.size());
    }
    if (!o.quiet) fmt::print(stderr, "\n");
  }
  return result;
}

}  // namespace dietcode::bench
