#include "tune/tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "codegen/llvm/target.h"
#include "support/error.h"
#include "support/stats.h"
#include "tune/cost_model.h"
#include "tune/finalists.h"
#include "tune/progress.h"
#include "tune/select.h"
#include "tune/small_space.h"
#include "tune/trials.h"

namespace dietcode::tune {

namespace {

using schedule::MicroKernelSchedule;

// Where a search's time goes (the notes' "search: ..."): each phase adds the seconds since
// the previous one ended.
struct SearchTimes {
  double measuring = 0, fitting = 0, evolving = 0;
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
  void add(double& phase) {
    const auto now = std::chrono::steady_clock::now();
    phase += std::chrono::duration<double>(now - last).count();
    last = now;
  }
};

// The contraction cost model's predictions for kernels of any kind (all contractions).
PredictAt predictor(const CostModel& model) {
  return [&model](const std::vector<schedule::AnySchedule>& k,
                  const std::vector<std::vector<int64_t>>& shapes) {
    std::vector<MicroKernelSchedule> kernels;
    for (const schedule::AnySchedule& s : k) kernels.push_back(std::get<MicroKernelSchedule>(s));
    return model.predict_at_shapes(kernels, shapes);
  };
}

std::vector<schedule::AnySchedule> any(const std::vector<MicroKernelSchedule>& k) {
  return {k.begin(), k.end()};
}

// The search's seeds, shared by both modes: the kernels of `records` in first-measured
// order, scored by `score` on their first measurement, the correct ones best first;
// and every kernel measured (correct or not), which the search must not propose again.
struct Seeds {
  std::vector<MicroKernelSchedule> best_first;
  ScheduleSet measured;
};

Seeds rank_seeds(const std::vector<const TuningRecord*>& records,
                 const std::function<double(const TuningRecord&)>& score) {
  Seeds out;
  std::vector<std::pair<double, const MicroKernelSchedule*>> scored;
  for (const TuningRecord* r : records)
    if (out.measured.insert(micro_kernel(*r)).second && r->ok())
      scored.push_back({score(*r), &micro_kernel(*r)});
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [g, s] : scored) out.best_first.push_back(*s);
  return out;
}

// Shape probes: for the declared shapes with the fewest measurements of their own,
// slowest first (weight * predicted latency), the best-predicted measured kernel not yet
// measured there. `top`: the best measured kernels; `predicted`: their predictions
// [kernel][shape] at the declared shapes.
std::vector<Trial> plan_probes(const std::vector<TuningRecord>& records,
                               const std::vector<std::vector<int64_t>>& shapes,
                               const ShapeExtents& extents, const std::vector<double>& weights,
                               const std::vector<MicroKernelSchedule>& top,
                               const std::vector<std::vector<double>>& predicted, int count) {
  std::vector<Trial> out;
  if (count <= 0 || top.empty()) return out;
  std::map<std::vector<int64_t>, int> per_shape;
  std::set<std::pair<std::vector<int64_t>, uint64_t>> done_pairs;
  for (const TuningRecord& r : records) {
    ++per_shape[r.shape];
    done_pairs.insert({r.shape, schedule::digest(r.schedule)});
  }
  auto best_prediction = [&](size_t s) {
    double best = 0;
    for (const auto& row : predicted) best = std::max(best, row[s]);
    return best;
  };
  auto latency = [&](size_t s) {
    return weights[s] * extents[s].flops() / std::max(best_prediction(s), 1e-9);
  };
  std::vector<size_t> order(shapes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (per_shape[shapes[a]] != per_shape[shapes[b]])
      return per_shape[shapes[a]] < per_shape[shapes[b]];
    return latency(a) > latency(b);
  });
  for (size_t s : order) {
    if (int(out.size()) >= count) break;
    std::vector<size_t> ks(top.size());
    for (size_t k = 0; k < ks.size(); ++k) ks[k] = k;
    std::sort(ks.begin(), ks.end(),
              [&](size_t a, size_t b) { return predicted[a][s] > predicted[b][s]; });
    for (size_t k : ks)
      if (done_pairs.insert({shapes[s], top[k].digest()}).second) {
        out.push_back({{top[k], shapes[s], ""}, Origin::Probe});
        break;
      }
  }
  return out;
}

// Occupancy calibration (once, with several threads): up to three of the best measured
// kernels that run parallel over M, each on the declared shapes that give it 1, 2 and 3
// tasks, so occ's exponent is fitted from this machine rather than assumed.
constexpr int kCalibrationTrials = 9;  // 3 kernels x 3 task counts

std::vector<Trial> plan_calibration(const std::vector<MicroKernelSchedule>& seeds,
                                    const std::vector<std::vector<int64_t>>& shapes) {
  std::vector<Trial> out;
  int kernels = 0;
  for (const MicroKernelSchedule& s : seeds) {
    if (s.parallel != schedule::ParallelAxis::M || kernels >= 3) continue;
    bool any = false;
    for (int64_t tasks = 1; tasks <= 3; ++tasks) {
      auto it = std::find(shapes.begin(), shapes.end(), std::vector<int64_t>{s.mc * tasks});
      if (it == shapes.end()) continue;
      out.push_back({{s, *it, ""}, Origin::Calibration});
      any = true;
    }
    if (any) ++kernels;
  }
  return out;
}

}  // namespace

nlohmann::json workload_json(const ops::OperatorSpec& op, int threads, bool cold_weights) {
  nlohmann::json j = {{"operator", ops::to_json(op)}, {"threads", threads}};
  if (cold_weights) j["weights"] = "cold";  // measured otherwise: records not to be mixed
  return j;
}

namespace {

TuneReport tune_joint(const TuneOptions& o, RecordFile& records,
                      const std::vector<TuningRecord>& warm, Measurer& measurer) {
  TuneReport report;
  te::Operator op = o.op.build();
  std::vector<std::vector<int64_t>> shapes = o.op.declared_shapes();
  SearchSpace space(op, codegen::host_target().isa, o.threads, shapes, SpaceKind::ShapeGeneric,
                    o.measure.cold_weights);
  CostModel model(op, o.threads);
  Progress progress(o.label, o.trials, o.quiet, "GFLOP/s", o.whole);
  resume_joint_progress(progress, records, o);
  // A resumed run draws different candidates than the first one did.
  std::mt19937_64 rng(o.seed * 1000003 + uint64_t(records.records().size()));
  SearchContext ctx;
  ctx.space = &space;
  ctx.model = &model;
  ctx.weights = o.op.declared_weights();
  int round = 0;
  bool calibrated = false;
  for (const TuningRecord& r : records.records())
    if (r.origin == Origin::Calibration) calibrated = true;
  std::unordered_map<MicroKernelSchedule, size_t, schedule::ScheduleHash> seed_shape;
  SearchTimes times;
  while (progress.done() < o.trials) {
    ++round;
    times.last = std::chrono::steady_clock::now();
    model.fit(clean_records(records.records(), warm));
    times.add(times.fitting);
    // Seeds: the search's own candidates (measured at S*), by intrinsic throughput.
    std::vector<const TuningRecord*> searched;
    for (const TuningRecord& r : records.records())
      if (r.origin == Origin::Joint) searched.push_back(&r);
    Seeds seeds =
        rank_seeds(searched, [&](const TuningRecord& r) { return model.intrinsic_gflops(r); });
    ctx.trials_so_far = progress.done();
    ctx.rule_seeds.clear();
    if (progress.done() == 0) {
      for (SearchSpace::RuleSeed& r : space.rule_seeds()) {
        seed_shape[r.schedule] = r.shape;
        ctx.rule_seeds.push_back(std::move(r.schedule));
      }
    }
    // This round's budget: search candidates, then probes, then (once) calibration.
    const bool seeded = seeds.best_first.size() >= size_t(o.search.measure_per_round);
    int count = int(std::min<int64_t>(o.search.measure_per_round, o.trials - progress.done()));
    int probes = seeded ? int(std::round(count * o.search.shape_probe_fraction)) : 0;
    const bool calibrate_now = o.threads > 1 && !calibrated && seeded;
    const int calibration_room = calibrate_now ? kCalibrationTrials : 0;
    if (calibrate_now) probes = std::max(probes, calibration_room);
    std::vector<Trial> trials;
    for (const MicroKernelSchedule& s :
         propose_batch(ctx, o.search, seeds.best_first, seeds.measured, count - probes, rng)) {
      auto seed = seed_shape.find(s);  // a rule seed is measured on the shape it was made for
      const size_t at =
          seed != seed_shape.end() ? seed->second : model.best_fit(s, space.extents());
      trials.push_back({{s, shapes[at], ""}, Origin::Joint});
    }
    std::vector<MicroKernelSchedule> top(
        seeds.best_first.begin(),
        seeds.best_first.begin() + std::min<size_t>(seeds.best_first.size(), 64));
    std::vector<std::vector<double>> predicted = model.predict_at_shapes(top, shapes);
    int probe_room = count - calibration_room - int(trials.size());
    if (probes > 0)
      for (Trial& t : plan_probes(records.records(), shapes, space.extents(), ctx.weights, top,
                                  predicted, probe_room))
        trials.push_back(std::move(t));
    if (calibrate_now) {
      calibrated = true;
      for (Trial& t : plan_calibration(seeds.best_first, shapes)) trials.push_back(std::move(t));
    }
    times.add(times.evolving);
    if (trials.empty()) {
      report.notes.push_back("the search space is exhausted: no unmeasured candidate left");
      break;
    }
    measure_and_record(measurer, records, trials, progress);
    times.add(times.measuring);
    // Progress: the geomean over shapes of the best predicted and best measured GFLOP/s.
    std::vector<double> best_pred(top.empty() ? 0 : shapes.size(), 0.0), best_meas;
    for (const auto& row : predicted)
      for (size_t i = 0; i < row.size(); ++i) best_pred[i] = std::max(best_pred[i], row[i]);
    std::map<std::vector<int64_t>, double> best_at;
    for (const TuningRecord& r : records.records())
      if (r.ok()) best_at[r.shape] = std::max(best_at[r.shape], r.gflops);
    for (auto& [shape, g] : best_at) best_meas.push_back(g);
    progress.round_done(fmt::format("round {:3d}", round), geomean(best_pred), geomean(best_meas));
  }
  count_trials(progress, report);
  if (round > 0)
    report.notes.push_back(fmt::format(
        "search: {} rounds, {:.1f} s measuring, {:.1f} s fitting the cost model, {:.1f} s "
        "evolving and planning",
        round, times.measuring, times.fitting, times.evolving));
  // Selection over every kernel measured correct somewhere, from the finalists' paired
  // numbers, planned without the finals themselves.
  std::vector<TuningRecord> trials_only = without_finals(records.records());
  model.fit(clean_records(trials_only, warm));
  std::vector<const TuningRecord*> own = ok_records(trials_only);
  std::vector<MicroKernelSchedule> candidates;
  ScheduleSet seen;
  for (const TuningRecord* r : own)
    if (seen.insert(micro_kernel(*r)).second) candidates.push_back(micro_kernel(*r));
  PredictAt predict = predictor(model);
  std::vector<std::vector<double>> score = candidate_scores(o.op, predict, any(candidates), own);
  report.module =
      select_with_finals(o, records, measurer, predict, any(candidates), score, report.notes);
  report.notes.push_back(fmt::format("occupancy exponent fitted: {:.3f} ({} threads)",
                                     model.occupancy().alpha, o.threads));
  return report;
}

TuneReport tune_per_shape(const TuneOptions& o, RecordFile& records,
                          const std::vector<TuningRecord>& warm, Measurer& measurer) {
  TuneReport report;
  te::Operator op = o.op.build();
  std::vector<int64_t> ms = o.per_shape_m;
  if (ms.empty())
    for (const auto& s : o.op.declared_shapes()) ms.push_back(s[0]);
  Progress progress(o.label, o.trials_per_shape * int64_t(ms.size()), o.quiet, "GFLOP/s", o.whole);
  std::mt19937_64 rng(o.seed * 1000003 + uint64_t(records.records().size()));
  std::vector<MicroKernelSchedule> winners;
  ScheduleSet winner_set;
  SearchTimes times;
  for (int64_t m : ms) {
    std::vector<int64_t> shape{m};
    auto own = [&] {
      std::vector<const TuningRecord*> out;
      for (const TuningRecord& r : records.records())
        if (r.origin == Origin::PerShape && r.shape == shape) out.push_back(&r);
      return out;
    };
    int64_t done = int64_t(own().size());
    {
      int64_t errors = 0;
      for (const TuningRecord* r : own()) errors += r->ok() ? 0 : 1;
      progress.resume(done, errors);
    }
    auto shape_start = std::chrono::steady_clock::now();
    SearchSpace space(op, codegen::host_target().isa, o.threads, {shape}, SpaceKind::Divisors);
    CostModel model(op, o.threads);  // one model per shape, as Ansor tunes one task
    SearchContext ctx;
    ctx.space = &space;
    ctx.model = &model;
    ctx.weights = {1.0};
    while (done < o.trials_per_shape) {
      std::vector<const TuningRecord*> mine = own(), mine_ok;
      for (const TuningRecord* r : mine)
        if (r->ok() && r->gflops > 0) mine_ok.push_back(r);
      std::erase_if(mine_ok, [](const TuningRecord* r) { return !r->clean(); });
      times.last = std::chrono::steady_clock::now();
      model.fit(mine_ok);
      times.add(times.fitting);
      Seeds seeds = rank_seeds(mine, [](const TuningRecord& r) { return r.gflops; });
      ctx.trials_so_far = done;
      int count = int(std::min<int64_t>(o.search.measure_per_round, o.trials_per_shape - done));
      std::vector<Trial> trials;
      for (const MicroKernelSchedule& s :
           propose_batch(ctx, o.search, seeds.best_first, seeds.measured, count, rng))
        trials.push_back({{s, shape, ""}, Origin::PerShape});
      times.add(times.evolving);
      if (trials.empty()) {
        report.notes.push_back(
            fmt::format("M={}: the divisor space is exhausted after {} trials", m, done));
        break;
      }
      measure_and_record(measurer, records, trials, progress);
      times.add(times.measuring);
      done += int64_t(trials.size());
      double best = 0;
      for (const TuningRecord* r : own())
        if (r->ok()) best = std::max(best, r->gflops);
      progress.round_done(fmt::format("M={:4d}", m), 0.0, best);
    }
    report.shape_seconds.push_back(
        {m, std::chrono::duration<double>(std::chrono::steady_clock::now() - shape_start).count()});
    const TuningRecord* best = nullptr;
    for (const TuningRecord* r : own())
      if (r->ok() && (!best || r->gflops > best->gflops)) best = r;
    if (!best) user_error("M={}: no trial produced a correct kernel", m);
    if (winner_set.insert(micro_kernel(*best)).second) winners.push_back(micro_kernel(*best));
  }
  count_trials(progress, report);
  report.notes.push_back(
      fmt::format("search: {:.1f} s measuring, {:.1f} s fitting the cost models, {:.1f} s "
                  "evolving",
                  times.measuring, times.fitting, times.evolving));
  // A module from the per-shape winners: each tuned shape keeps its own winner; the other
  // shapes go to the winner a cost model over all per-shape records predicts best.
  CostModel model(op, o.threads);
  std::vector<TuningRecord> all;
  for (const TuningRecord& r : records.records())
    if (r.origin == Origin::PerShape) all.push_back(r);
  model.fit(clean_records(all, warm));
  PredictAt predict = predictor(model);
  // Each tuned shape keeps its winner whatever layout it packs the weights in: the
  // baseline tunes every shape alone, as Ansor tunes one task.
  TuneOptions each_its_own = o;
  each_its_own.max_weight_layouts = 0;
  report.module = build_module(each_its_own, predict, any(winners),
                               candidate_scores(o.op, predict, any(winners), ok_records(all)),
                               int(winners.size()), report.notes);
  return report;
}

}  // namespace

int64_t trial_budget(const TuneOptions& o) {
  if (schedule::kind_of_operator(o.op) != schedule::Kind::Contraction)
    return small_space_budget(o, SmallSpace(o.op, codegen::host_target().isa, o.threads));
  if (!o.per_shape) return o.trials;
  const size_t shapes =
      o.per_shape_m.empty() ? o.op.declared_shapes().size() : o.per_shape_m.size();
  return o.trials_per_shape * int64_t(shapes);
}

TuneReport tune(const TuneOptions& o) {
  if (o.records_path.empty()) user_error("--records: a records file is required");
  if (o.threads < 1) user_error("--threads {}: expected >= 1", o.threads);
  if (!o.per_shape && o.trials < 1) user_error("--trials {}: expected >= 1", o.trials);
  if (o.max_kernels < 1) user_error("--max-kernels {}: expected >= 1", o.max_kernels);
  if (o.max_weight_layouts < 0)
    user_error("--weight-layouts {}: expected >= 0 (0: no limit)", o.max_weight_layouts);
  if (o.per_shape && o.trials_per_shape < 1)
    user_error("--trials-per-shape {}: expected >= 1", o.trials_per_shape);
  for (int64_t m : o.per_shape_m)
    if (m < o.op.m_min || m > o.op.m_max)
      user_error("per-shape M={} is outside the declared range {}..{}", m, o.op.m_min, o.op.m_max);
  o.op.build();  // validates
  const bool small_space = schedule::kind_of_operator(o.op) != schedule::Kind::Contraction;
  if (small_space && o.per_shape)
    user_error(
        "operator {}: the per-shape (Ansor-style) baseline covers dense and batch_matmul; {} "
        "is tuned jointly (leave out --per-shape)",
        o.op.op, o.op.op);
  auto start = std::chrono::steady_clock::now();
  RecordFile records = RecordFile::open(
      {o.records_path, workload_json(o.op, o.threads, o.measure.cold_weights), this_machine()});
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
  TuneReport report = small_space   ? tune_small_space(o, records, measurer)
                      : o.per_shape ? tune_per_shape(o, records, warm, measurer)
                                    : tune_joint(o, records, warm, measurer);
  report.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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
  if (schedule::kind_of_operator(spec) != schedule::Kind::Contraction)
    user_error(
        "operator {}: the cost model evaluation covers dense and batch_matmul (a {} operator's "
        "schedules are listed and measured, not ranked by the learned model alone)",
        spec.op, spec.op);
  te::Operator op = spec.build();
  std::vector<const TuningRecord*> ok = clean_records(records);
  // Split by schedule (its digest): a kernel is never on both sides.
  std::vector<const TuningRecord*> train, test;
  for (const TuningRecord* r : ok)
    (schedule::digest(r->schedule) % 5 == 0 ? test : train).push_back(r);
  CostModel model(op, threads);
  model.fit(train);
  ModelEvaluation e;
  e.train = train.size();
  e.test = test.size();
  e.learned = model.throughput().trained();
  e.predicted = model.predict_records(test);
  for (const TuningRecord* r : test) {
    e.measured.push_back(r->gflops);
    e.origins.push_back(std::string(to_string(r->origin)));
  }
  e.accuracy = pairwise_ranking_accuracy(e.predicted, e.measured);
  e.accuracy_beyond_noise = pairwise_ranking_accuracy(e.predicted, e.measured, 0.05);
  return e;
}

}  // namespace dietcode::tune
