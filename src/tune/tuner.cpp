#include "tune/tuner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <set>

#include "codegen/llvm/target.h"
#include "support/error.h"
#include "support/hash.h"
#include "support/stats.h"
#include "tune/select.h"

namespace dietcode::tune {

namespace {

using Clock = std::chrono::steady_clock;
using schedule::MicroKernelSchedule;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string duration_text(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", int(s) / 60, int(s) % 60);
  return fmt::format("{}h{:02d}m", int(s) / 3600, (int(s) % 3600) / 60);
}

// The cost model as trained on a set of records.
struct CostModel {
  te::Operator op;
  ops::Contraction c;
  int threads = 1;
  OccupancyModel occ;
  ThroughputModel f;

  CostModel(const te::Operator& o, int t) : op(o), c(ops::match_contraction(o)), threads(t) {
    occ.cores = t;
  }

  Extents extents(const std::vector<int64_t>& shape) const { return ShapeExtents::at(c, op, shape); }

  // Fits occ's exponent, then f_MK on intrinsic labels gflops / (occ * pad).
  void fit(const std::vector<const TuningRecord*>& records) {
    std::map<std::string, int> group;
    std::vector<OccupancyModel::Sample> samples;
    for (const TuningRecord* r : records) {
      Extents e = extents(r->shape);
      int g = group.emplace(schedule::to_json_text(r->schedule), int(group.size())).first->second;
      samples.push_back({g, parallel_tasks(r->schedule, e), r->gflops / pad_ratio(r->schedule, e)});
    }
    occ.fit(samples);
    std::vector<std::vector<float>> x;
    std::vector<double> y;
    for (const TuningRecord* r : records) {
      Extents e = extents(r->shape);
      x.push_back(micro_kernel_features(r->schedule, e, threads));
      y.push_back(r->gflops / (occ.occ(r->schedule, e) * pad_ratio(r->schedule, e)));
    }
    f.train(x, y);
  }

  // Predicted GFLOP/s of each record's kernel at the record's shape (one batched call).
  std::vector<double> predict_records(const std::vector<const TuningRecord*>& records) const {
    std::vector<std::vector<float>> x;
    std::vector<Extents> ext;
    for (const TuningRecord* r : records) {
      ext.push_back(extents(r->shape));
      x.push_back(micro_kernel_features(r->schedule, ext.back(), threads));
    }
    std::vector<double> out = f.predict(x);
    for (size_t i = 0; i < records.size(); ++i)
      out[i] *= occ.occ(records[i]->schedule, ext[i]) * pad_ratio(records[i]->schedule, ext[i]);
    return out;
  }

  // Predicted GFLOP/s of each kernel at each shape: f_MK(features at the shape) * occ * pad.
  std::vector<std::vector<double>> predict(const std::vector<MicroKernelSchedule>& kernels,
                                           const std::vector<std::vector<int64_t>>& shapes) const {
    std::vector<Extents> ext;
    for (const auto& s : shapes) ext.push_back(extents(s));
    std::vector<std::vector<float>> x;
    for (const auto& e : ext)
      for (const auto& k : kernels) x.push_back(micro_kernel_features(k, e, threads));
    std::vector<double> f_mk = f.predict(x);
    std::vector<std::vector<double>> out(shapes.size(), std::vector<double>(kernels.size()));
    for (size_t s = 0; s < shapes.size(); ++s)
      for (size_t k = 0; k < kernels.size(); ++k)
        out[s][k] = f_mk[s * kernels.size() + k] * occ.occ(kernels[k], ext[s]) *
                    pad_ratio(kernels[k], ext[s]);
    return out;
  }
};

std::vector<const TuningRecord*> ok_records(const std::vector<TuningRecord>& a,
                                            const std::vector<TuningRecord>& b = {}) {
  std::vector<const TuningRecord*> out;
  for (const auto* v : {&a, &b})
    for (const TuningRecord& r : *v)
      if (r.ok() && r.gflops > 0) out.push_back(&r);
  return out;
}

// Shapes beyond the declared range the dispatcher is also fitted on, so that an
// undeclared shape goes to the kernel the cost model prefers there.
std::vector<std::vector<int64_t>> outside_shapes(const ops::OperatorSpec& op) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t m = 1; m < op.m_min; m = std::max(m + 1, m * 5 / 4)) out.push_back({m});
  for (int64_t m = op.m_max + 1; m <= op.m_max * 64; m = std::max(m + 1, m * 9 / 8))
    out.push_back({m});
  return out;
}

// A module from candidate kernels: score every (declared or outside) shape by
// measurement where one exists, else by the cost model; select; fit the tree.
runtime::ModuleSpec build_module(const TuneOptions& o, const CostModel& model,
                                 const std::vector<MicroKernelSchedule>& candidates,
                                 const std::vector<const TuningRecord*>& records, int max_kernels,
                                 std::vector<std::string>& notes) {
  std::vector<std::vector<int64_t>> declared = o.op.declared_shapes();
  std::vector<double> weights = o.op.declared_weights();
  std::vector<std::vector<double>> score = model.predict(candidates, declared);
  // Measured numbers replace predictions where the kernel was measured on that shape.
  std::map<std::string, int> index;
  for (size_t k = 0; k < candidates.size(); ++k)
    index[schedule::to_json_text(candidates[k])] = int(k);
  std::map<std::vector<int64_t>, int> shape_index;
  for (size_t s = 0; s < declared.size(); ++s) shape_index[declared[s]] = int(s);
  std::map<std::pair<int, int>, std::vector<double>> measured;
  for (const TuningRecord* r : records) {
    auto k = index.find(schedule::to_json_text(r->schedule));
    auto s = shape_index.find(r->shape);
    if (k != index.end() && s != shape_index.end())
      measured[{s->second, k->second}].push_back(r->gflops);
  }
  for (auto& [sk, v] : measured) {
    std::sort(v.begin(), v.end());
    score[sk.first][sk.second] = v[v.size() / 2];
  }
  Selection sel = select_micro_kernels(score, weights, max_kernels);
  runtime::ModuleSpec m;
  m.op = o.op;
  m.isa = codegen::host_target().isa;
  m.threads = o.threads;
  std::vector<std::vector<int64_t>> tree_shapes = declared;
  std::vector<int> labels = sel.assignment;
  std::vector<MicroKernelSchedule> chosen;
  for (int k : sel.kernels) chosen.push_back(candidates[k]);
  std::vector<std::vector<int64_t>> outside = outside_shapes(o.op);
  if (!outside.empty()) {
    std::vector<std::vector<double>> p = model.predict(chosen, outside);
    for (size_t s = 0; s < outside.size(); ++s) {
      tree_shapes.push_back(outside[s]);
      labels.push_back(int(std::max_element(p[s].begin(), p[s].end()) - p[s].begin()));
    }
  }
  m.kernels = chosen;
  m.dispatch = build_dispatch_tree(tree_shapes, labels);
  notes.push_back(fmt::format("selected {} micro-kernels (top-{} cover), dispatch tree depth {}",
                              chosen.size(), sel.top_k, m.dispatch.depth()));
  return m;
}

struct Progress {
  Clock::time_point start = Clock::now();
  int64_t target = 0, done_at_start = 0, done = 0, errors = 0;
  bool quiet = false;
  std::string label;
  // The last geomeans, repeated while a round's trials complete.
  double last_predicted = 0, last_measured = 0;
  std::string last_step;
  bool tty = ::isatty(2) == 1;

  // One line per round; on a terminal the line is also redrawn after every trial.
  void print(const std::string& step, double best_predicted, double best_measured) {
    last_predicted = best_predicted;
    last_measured = best_measured;
    last_step = step;
    draw(true);
  }
  void trial_done() {
    if (tty && !last_step.empty()) draw(false);
  }
  void draw(bool end_line) const {
    if (quiet) return;
    const std::string& step = last_step;
    double best_predicted = last_predicted, best_measured = last_measured;
    std::string what = label.empty() ? step : label + " " + step;
    double elapsed = since(start);
    int64_t run = done - done_at_start;
    double eta = run > 0 ? elapsed / double(run) * double(target - done) : 0;
    int width = 24;
    int filled = target > 0 ? int(double(width) * double(done) / double(target)) : width;
    fmt::print(stderr,
               "{}{} [{}{}] {}/{} trials  {} elapsed  ETA {}  geomean best: predicted {}, "
               "measured {} GFLOP/s  errors {}{}",
               tty ? "\r\033[K" : "",
               what, std::string(std::min(filled, width), '#'),
               std::string(width - std::min(filled, width), '.'), done, target,
               duration_text(elapsed), duration_text(eta),
               best_predicted > 0 ? fmt::format("{:.1f}", best_predicted) : "-",
               best_measured > 0 ? fmt::format("{:.1f}", best_measured) : "-", errors,
               end_line || !tty ? "\n" : "");
  }
};

// Measures a batch and appends every result the moment it is final.
void measure_and_record(Measurer& measurer, RecordFile& records,
                        const std::vector<MeasureRequest>& requests,
                        const std::vector<std::string>& origins, Progress& progress) {
  measurer.measure(requests, [&](size_t i, const MeasureResult& r) {
    TuningRecord rec;
    rec.schedule = requests[i].schedule;
    rec.shape = requests[i].shape;
    rec.origin = origins[i];
    rec.seconds = r.error.empty() ? r.seconds : 0;
    rec.gflops = r.error.empty() ? r.gflops : 0;
    rec.max_rel_err = r.max_rel_err;
    rec.compile_seconds = r.compile_seconds;
    rec.error = r.error;
    if (rec.error.empty() && !(rec.seconds > 0)) rec.error = "no time measured";
    records.append(rec);
    ++progress.done;
    if (!rec.ok()) ++progress.errors;
    progress.trial_done();
  });
}

MeasureOptions measure_options(const TuneOptions& o) {
  MeasureOptions m = o.measure;
  m.threads = o.threads;
  if (m.worker_path.empty()) m.worker_path = default_worker_path();
  return m;
}

}  // namespace

nlohmann::json workload_json(const ops::OperatorSpec& op, int threads) {
  return {{"operator", ops::to_json(op)}, {"threads", threads}};
}

namespace {

TuneReport tune_joint(const TuneOptions& o, RecordFile& records,
                      const std::vector<TuningRecord>& warm, Measurer& measurer) {
  TuneReport report;
  te::Operator op = o.op.build();
  std::vector<std::vector<int64_t>> shapes = o.op.declared_shapes();
  SearchSpace space(op, codegen::host_target().isa, o.threads, shapes, SpaceKind::ShapeGeneric);
  CostModel model(op, o.threads);
  auto counts = [](const TuningRecord& r) {
    return r.origin == "joint" || r.origin == "probe" || r.origin == "calibration";
  };
  Progress progress;
  progress.quiet = o.quiet;
  progress.label = o.label;
  progress.target = o.trials;
  for (const TuningRecord& r : records.records())
    if (counts(r)) {
      ++progress.done;
      if (!r.ok()) ++progress.errors;
    }
  progress.done_at_start = progress.done;
  if (progress.done > 0 && !o.quiet)
    fmt::print(stderr, "{}resuming: {} trials already in {}\n",
               o.label.empty() ? "" : o.label + ": ", progress.done, records.path());
  // A resumed run draws different candidates than the first one did.
  std::mt19937_64 rng(o.seed * 1000003 + uint64_t(records.records().size()));
  SearchContext ctx;
  ctx.space = &space;
  ctx.model = &model.f;
  ctx.occ = &model.occ;
  ctx.weights = o.op.declared_weights();
  ctx.threads = o.threads;
  int round = 0;
  bool calibrated = false;
  for (const TuningRecord& r : records.records())
    if (r.origin == "calibration") calibrated = true;
  while (progress.done < o.trials) {
    ++round;
    std::vector<const TuningRecord*> ok = ok_records(records.records(), warm);
    model.fit(ok);
    // Measured at S* (searched) and their intrinsic throughput, best first, as seeds.
    std::set<std::string> measured;
    std::vector<std::pair<double, MicroKernelSchedule>> seeds_scored;
    for (const TuningRecord& r : records.records()) {
      if (r.origin != "joint") continue;
      if (measured.insert(schedule::to_json_text(r.schedule)).second && r.ok()) {
        Extents e = model.extents(r.shape);
        seeds_scored.push_back(
            {r.gflops / (model.occ.occ(r.schedule, e) * pad_ratio(r.schedule, e)), r.schedule});
      }
    }
    std::sort(seeds_scored.begin(), seeds_scored.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<MicroKernelSchedule> seeds;
    for (auto& [g, s] : seeds_scored) seeds.push_back(s);
    ctx.trials_so_far = progress.done;
    int count = int(std::min<int64_t>(o.search.measure_per_round, o.trials - progress.done));
    int probes = seeds.size() >= size_t(o.search.measure_per_round)
                     ? int(std::round(count * o.search.shape_probe_fraction))
                     : 0;
    // Room for the one-time occupancy calibration (below), taken from the probes.
    const bool calibrate_now =
        o.threads > 1 && !calibrated && seeds.size() >= size_t(o.search.measure_per_round);
    const int calibration_room = calibrate_now ? 9 : 0;
    if (calibrate_now) probes = std::max(probes, calibration_room);
    std::vector<MicroKernelSchedule> batch =
        propose_batch(ctx, o.search, seeds, measured, count - probes, rng);
    std::vector<MeasureRequest> requests;
    std::vector<std::string> origins;
    for (const MicroKernelSchedule& s : batch) {
      requests.push_back({s, shapes[best_fit_shape(s, space.extents(), model.occ)], ""});
      origins.push_back("joint");
    }
    // Shape probes: the best-predicted measured kernel on shapes that have the fewest
    // measurements of their own, slowest (weight * predicted latency) first.
    std::vector<std::vector<double>> predicted;
    std::vector<MicroKernelSchedule> top(seeds.begin(),
                                         seeds.begin() + std::min<size_t>(seeds.size(), 64));
    if (!top.empty()) predicted = model.predict(top, shapes);
    if (probes > 0 && !top.empty()) {
      std::map<std::vector<int64_t>, int> per_shape;
      std::set<std::pair<std::vector<int64_t>, std::string>> done_pairs;
      for (const TuningRecord& r : records.records()) {
        ++per_shape[r.shape];
        done_pairs.insert({r.shape, schedule::to_json_text(r.schedule)});
      }
      std::vector<size_t> order(shapes.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      auto latency = [&](size_t s) {
        double best = *std::max_element(predicted[s].begin(), predicted[s].end());
        return ctx.weights[s] * space.extents()[s].flops() / std::max(best, 1e-9);
      };
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (per_shape[shapes[a]] != per_shape[shapes[b]])
          return per_shape[shapes[a]] < per_shape[shapes[b]];
        return latency(a) > latency(b);
      });
      for (size_t s : order) {
        if (int(requests.size()) >= count - calibration_room) break;
        std::vector<size_t> ks(top.size());
        for (size_t k = 0; k < ks.size(); ++k) ks[k] = k;
        std::sort(ks.begin(), ks.end(),
                  [&](size_t a, size_t b) { return predicted[s][a] > predicted[s][b]; });
        for (size_t k : ks) {
          if (done_pairs.insert({shapes[s], schedule::to_json_text(top[k])}).second) {
            requests.push_back({top[k], shapes[s], ""});
            origins.push_back("probe");
            break;
          }
        }
      }
    }
    // Occupancy calibration, once, with several threads: the best measured kernels that
    // run parallel over M, each on the shapes that give it 1, 2 and 3 tasks, so occ's
    // exponent is fitted from this machine's behaviour rather than assumed.
    if (calibrate_now) {
      calibrated = true;
      int kernels = 0;
      for (const MicroKernelSchedule& s : seeds) {
        if (s.parallel != "m" || kernels >= 3) continue;
        bool any = false;
        for (int64_t tasks = 1; tasks <= 3; ++tasks) {
          int64_t m = s.mc * tasks;
          auto it = std::find(shapes.begin(), shapes.end(), std::vector<int64_t>{m});
          if (it == shapes.end()) continue;
          requests.push_back({s, *it, ""});
          origins.push_back("calibration");
          any = true;
        }
        if (any) ++kernels;
      }
    }
    if (requests.empty()) {
      report.notes.push_back("the search space is exhausted: no unmeasured candidate left");
      break;
    }
    measure_and_record(measurer, records, requests, origins, progress);
    // Progress: the geomean over shapes of the best predicted and best measured GFLOP/s.
    std::vector<double> best_pred, best_meas;
    for (const auto& row : predicted) best_pred.push_back(*std::max_element(row.begin(), row.end()));
    std::map<std::vector<int64_t>, double> best_at;
    for (const TuningRecord& r : records.records())
      if (r.ok()) best_at[r.shape] = std::max(best_at[r.shape], r.gflops);
    for (auto& [s, g] : best_at) best_meas.push_back(g);
    progress.print(fmt::format("round {:3d}", round), geomean(best_pred), geomean(best_meas));
  }
  report.trials_total = progress.done;
  report.trials_this_run = progress.done - progress.done_at_start;
  report.errors_total = progress.errors;
  // Selection over every kernel measured correct somewhere.
  std::vector<const TuningRecord*> ok = ok_records(records.records(), warm);
  model.fit(ok);
  std::vector<const TuningRecord*> own = ok_records(records.records());
  std::vector<MicroKernelSchedule> candidates;
  std::set<std::string> seen;
  for (const TuningRecord* r : own)
    if (seen.insert(schedule::to_json_text(r->schedule)).second) candidates.push_back(r->schedule);
  report.module = build_module(o, model, candidates, own, o.max_kernels, report.notes);
  report.notes.push_back(fmt::format("occupancy exponent fitted: {:.3f} ({} threads)",
                                     model.occ.alpha, o.threads));
  return report;
}

TuneReport tune_per_shape(const TuneOptions& o, RecordFile& records,
                          const std::vector<TuningRecord>& warm, Measurer& measurer) {
  TuneReport report;
  te::Operator op = o.op.build();
  std::vector<int64_t> ms = o.per_shape_m;
  if (ms.empty())
    for (const auto& s : o.op.declared_shapes()) ms.push_back(s[0]);
  Progress progress;
  progress.quiet = o.quiet;
  progress.label = o.label;
  progress.target = o.trials_per_shape * int64_t(ms.size());
  std::mt19937_64 rng(o.seed * 1000003 + uint64_t(records.records().size()));
  std::vector<MicroKernelSchedule> winners;
  std::set<std::string> winner_set;
  for (int64_t m : ms) {
    std::vector<int64_t> shape{m};
    auto mine = [&](const TuningRecord& r) { return r.origin == "per-shape" && r.shape == shape; };
    int64_t done = 0;
    for (const TuningRecord& r : records.records())
      if (mine(r)) ++done;
    progress.done += done;
    progress.done_at_start += done;
    auto shape_start = Clock::now();
    SearchSpace space(op, codegen::host_target().isa, o.threads, {shape}, SpaceKind::Divisors);
    CostModel model(op, o.threads);  // one model per shape, as Ansor tunes one task
    SearchContext ctx;
    ctx.space = &space;
    ctx.model = &model.f;
    ctx.occ = &model.occ;
    ctx.weights = {1.0};
    ctx.threads = o.threads;
    while (done < o.trials_per_shape) {
      std::vector<const TuningRecord*> own, own_ok;
      for (const TuningRecord& r : records.records())
        if (mine(r)) {
          own.push_back(&r);
          if (r.ok() && r.gflops > 0) own_ok.push_back(&r);
        }
      model.fit(own_ok);
      std::set<std::string> measured;
      std::vector<std::pair<double, MicroKernelSchedule>> scored;
      for (const TuningRecord* r : own)
        if (measured.insert(schedule::to_json_text(r->schedule)).second && r->ok())
          scored.push_back({r->gflops, r->schedule});
      std::sort(scored.begin(), scored.end(),
                [](const auto& a, const auto& b) { return a.first > b.first; });
      std::vector<MicroKernelSchedule> seeds;
      for (auto& [g, s] : scored) seeds.push_back(s);
      ctx.trials_so_far = done;
      int count = int(std::min<int64_t>(o.search.measure_per_round, o.trials_per_shape - done));
      std::vector<MicroKernelSchedule> batch =
          propose_batch(ctx, o.search, seeds, measured, count, rng);
      if (batch.empty()) {
        report.notes.push_back(
            fmt::format("M={}: the divisor space is exhausted after {} trials", m, done));
        break;
      }
      std::vector<MeasureRequest> requests;
      for (const auto& s : batch) requests.push_back({s, shape, ""});
      measure_and_record(measurer, records, requests,
                         std::vector<std::string>(requests.size(), "per-shape"), progress);
      done += int64_t(requests.size());
      double best = scored.empty() ? 0 : scored[0].first;
      for (const TuningRecord& r : records.records())
        if (mine(r) && r.ok()) best = std::max(best, r.gflops);
      progress.print(fmt::format("M={:4d}", m), 0.0, best);
    }
    report.shape_seconds.push_back({m, since(shape_start)});
    const TuningRecord* best = nullptr;
    for (const TuningRecord& r : records.records())
      if (mine(r) && r.ok() && (!best || r.gflops > best->gflops)) best = &r;
    if (!best) user_error("M={}: no trial produced a correct kernel", m);
    if (winner_set.insert(schedule::to_json_text(best->schedule)).second)
      winners.push_back(best->schedule);
  }
  report.trials_total = progress.done;
  report.trials_this_run = progress.done - progress.done_at_start;
  report.errors_total = progress.errors;
  // A module from the per-shape winners: each tuned shape keeps its own winner; the other
  // shapes go to the winner a cost model over all per-shape records predicts best.
  CostModel model(op, o.threads);
  std::vector<TuningRecord> all;
  for (const TuningRecord& r : records.records())
    if (r.origin == "per-shape") all.push_back(r);
  std::vector<const TuningRecord*> ok = ok_records(all, warm);
  model.fit(ok);
  report.module = build_module(o, model, winners, ok_records(all), int(winners.size()), report.notes);
  return report;
}

}  // namespace

TuneReport tune(const TuneOptions& o) {
  if (o.records_path.empty()) user_error("--records: a records file is required");
  if (o.threads < 1) user_error("--threads {}: expected >= 1", o.threads);
  if (!o.per_shape && o.trials < 1) user_error("--trials {}: expected >= 1", o.trials);
  if (o.per_shape && o.trials_per_shape < 1)
    user_error("--trials-per-shape {}: expected >= 1", o.trials_per_shape);
  for (int64_t m : o.per_shape_m)
    if (m < o.op.m_min || m > o.op.m_max)
      user_error("per-shape M={} is outside the declared range {}..{}", m, o.op.m_min,
                 o.op.m_max);
  o.op.build();  // validates
  auto start = Clock::now();
  RecordFile records =
      RecordFile::open({o.records_path, workload_json(o.op, o.threads), this_machine()});
  for (const std::string& w : records.warnings())
    if (!o.quiet) fmt::print(stderr, "warning: {}\n", w);
  std::vector<TuningRecord> warm;
  if (!o.warm_start_path.empty()) {
    warm = read_records_any_machine(o.warm_start_path);
    if (!o.quiet)
      fmt::print(stderr, "warm start: {} records from {} (cost model only)\n", warm.size(),
                 o.warm_start_path);
  }
  Measurer measurer(o.op, measure_options(o));
  TuneReport report = o.per_shape ? tune_per_shape(o, records, warm, measurer)
                                  : tune_joint(o, records, warm, measurer);
  report.wall_seconds = since(start);
  std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  report.module.machine = to_json(this_machine());
  report.module.provenance = {{"tool", "dietcode 0.1.0"},
                              {"name", o.name},
                              {"workload", o.workload},
                              {"created", date},
                              {"mode", o.per_shape ? "per-shape" : "joint"},
                              {"records", records.path()},
                              {"records_digest", records.digest()},
                              {"trials", report.trials_total},
                              {"errors", report.errors_total},
                              {"wall_seconds_this_run", report.wall_seconds}};
  return report;
}

ModelEvaluation evaluate_cost_model(const ops::OperatorSpec& spec, int threads,
                                    const std::vector<TuningRecord>& records) {
  te::Operator op = spec.build();
  std::vector<const TuningRecord*> ok = ok_records(records);
  // Split by schedule (FNV of its JSON): a kernel is never on both sides.
  std::vector<const TuningRecord*> train, test;
  for (const TuningRecord* r : ok)
    (fnv1a64(schedule::to_json_text(r->schedule)) % 5 == 0 ? test : train).push_back(r);
  CostModel model(op, threads);
  model.fit(train);
  ModelEvaluation e;
  e.train = train.size();
  e.test = test.size();
  e.learned = model.f.trained();
  e.predicted = model.predict_records(test);
  for (const TuningRecord* r : test) {
    e.measured.push_back(r->gflops);
    e.origins.push_back(r->origin);
  }
  e.accuracy = pairwise_ranking_accuracy(e.predicted, e.measured);
  e.accuracy_beyond_noise = pairwise_ranking_accuracy(e.predicted, e.measured, 0.05);
  return e;
}

}  // namespace dietcode::tune
