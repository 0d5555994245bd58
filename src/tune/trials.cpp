#include "tune/trials.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <unordered_map>

#include "codegen/llvm/target.h"
#include "lower/pipeline.h"
#include "tune/analysis.h"
#include "tune/select.h"

namespace dietcode::tune {

// The correct records: every one may be a selection candidate.
std::vector<const TuningRecord*> ok_records(const std::vector<TuningRecord>& a,
                                            const std::vector<TuningRecord>& b) {
  std::vector<const TuningRecord*> out;
  for (const auto* v : {&a, &b})
    for (const TuningRecord& r : *v)
      if (r.ok() && r.gflops > 0) out.push_back(&r);
  return out;
}

// What the cost model learns from: the correct records not marked disturbed (a time a
// neighbour inflated would teach f_MK a wrong throughput).
std::vector<const TuningRecord*> clean_records(const std::vector<TuningRecord>& a,
                                               const std::vector<TuningRecord>& b) {
  std::vector<const TuningRecord*> out;
  for (const TuningRecord* r : ok_records(a, b))
    if (r->clean()) out.push_back(r);
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

void resume_joint_progress(Progress& progress, const RecordFile& records, const TuneOptions& o) {
  int64_t trials = 0, errors = 0;
  for (const TuningRecord& r : records.records())
    if (is_joint_trial(r.origin)) {
      ++trials;
      if (!r.ok()) ++errors;
    }
  progress.resume(trials, errors);
  if (progress.done() > 0 && !o.quiet)
    fmt::print(stderr, "{}resuming: {} trials already in {}\n",
               o.label.empty() ? "" : o.label + ": ", progress.done(), records.path());
}

void count_trials(const Progress& progress, TuneReport& report) {
  report.trials_total = progress.done();
  report.trials_this_run = progress.done() - progress.done_at_start();
  report.errors_total = progress.errors();
}

std::vector<TuningRecord> without_finals(const std::vector<TuningRecord>& records) {
  std::vector<TuningRecord> out;
  for (const TuningRecord& r : records)
    if (!is_side_by_side(r.origin)) out.push_back(r);
  return out;
}

TuningRecord to_record(const schedule::AnySchedule& s, const std::vector<int64_t>& shape,
                       Origin origin, const MeasureResult& r) {
  TuningRecord rec;
  rec.schedule = s;
  rec.shape = shape;
  rec.origin = origin;
  rec.seconds = r.error.empty() ? r.seconds : 0;
  rec.gflops = r.error.empty() ? r.gflops : 0;
  rec.max_rel_err = r.max_rel_err;
  rec.compile_seconds = r.compile_seconds;
  rec.error = r.error;
  if (r.error.empty()) rec.timing = r.timing;
  if (rec.error.empty() && !(rec.seconds > 0)) rec.error = "no time measured";
  return rec;
}

// Measures a batch and appends every result the moment it is final.
void measure_and_record(Measurer& measurer, RecordFile& records, const std::vector<Trial>& trials,
                        Progress& progress) {
  std::vector<MeasureRequest> requests;
  for (const Trial& t : trials) requests.push_back(t.request);
  measurer.measure(requests, [&](size_t i, const MeasureResult& r) {
    TuningRecord rec = to_record(requests[i].schedule, requests[i].shape, trials[i].origin, r);
    records.append(rec);
    progress.trial_done(rec.ok());
  });
}

MeasureOptions measure_options(const TuneOptions& o) {
  MeasureOptions m = o.measure;
  m.threads = o.threads;
  if (m.worker_path.empty()) m.worker_path = default_worker_path();
  return m;
}

std::vector<std::vector<double>> candidate_scores(
    const ops::OperatorSpec& op, const PredictAt& predict,
    const std::vector<schedule::AnySchedule>& candidates,
    const std::vector<const TuningRecord*>& records) {
  std::vector<std::vector<int64_t>> declared = op.declared_shapes();
  std::vector<std::vector<double>> predicted = predict(candidates, declared);
  std::vector<std::vector<double>> score(declared.size(), std::vector<double>(candidates.size()));
  for (size_t k = 0; k < candidates.size(); ++k)
    for (size_t s = 0; s < declared.size(); ++s) score[s][k] = predicted[k][s];
  std::unordered_map<schedule::AnySchedule, int, schedule::AnyScheduleHash> index;
  for (size_t k = 0; k < candidates.size(); ++k) index[candidates[k]] = int(k);
  std::map<std::vector<int64_t>, int> shape_index;
  for (size_t s = 0; s < declared.size(); ++s) shape_index[declared[s]] = int(s);
  std::map<std::pair<int, int>, std::vector<double>> measured;
  for (const TuningRecord* r : records) {
    auto k = index.find(r->schedule);
    auto s = shape_index.find(r->shape);
    if (k != index.end() && s != shape_index.end())
      measured[{s->second, k->second}].push_back(r->gflops);
  }
  for (auto& [sk, v] : measured) {
    std::sort(v.begin(), v.end());
    score[sk.first][sk.second] = v[v.size() / 2];
  }
  return score;
}

uint64_t LayoutIds::operator()(const schedule::AnySchedule& s) {
  auto [at, added] = ids_.try_emplace(s, 0);
  if (added) at->second = lower::packed_layout_id(lower::lower(op_, s));
  return at->second;
}

std::vector<uint64_t> LayoutIds::operator()(const std::vector<schedule::AnySchedule>& kernels) {
  std::vector<uint64_t> out;
  for (const schedule::AnySchedule& k : kernels) out.push_back((*this)(k));
  return out;
}

namespace {

// The distinct packed layouts `kernels` read their weights in (none for unpacked ones).
std::vector<uint64_t> packed_layouts_read(LayoutIds& layout_of,
                                          const std::vector<schedule::AnySchedule>& kernels) {
  std::vector<uint64_t> read;
  for (const schedule::AnySchedule& k : kernels)
    if (const uint64_t id = layout_of(k);
        id != 0 && std::find(read.begin(), read.end(), id) == read.end())
      read.push_back(id);
  return read;
}

}  // namespace

std::vector<bool> within_layout_budget(const TuneOptions& o, LayoutIds& layout_of,
                                       const std::vector<schedule::AnySchedule>& selected,
                                       const std::vector<schedule::AnySchedule>& kernels) {
  const std::vector<uint64_t> read = packed_layouts_read(layout_of, selected);
  const bool room = o.max_weight_layouts <= 0 || int(read.size()) < o.max_weight_layouts;
  std::vector<bool> out;
  for (const schedule::AnySchedule& k : kernels) {
    const uint64_t id = room ? 0 : layout_of(k);
    out.push_back(id == 0 || std::find(read.begin(), read.end(), id) != read.end());
  }
  return out;
}

runtime::ModuleSpec build_module(const TuneOptions& o, const PredictAt& predict,
                                 const std::vector<schedule::AnySchedule>& candidates,
                                 const std::vector<std::vector<double>>& score, int max_kernels,
                                 std::vector<std::string>& notes, LayoutIds* layout_of) {
  std::vector<std::vector<int64_t>> declared = o.op.declared_shapes();
  std::vector<double> weights = o.op.declared_weights();
  std::optional<LayoutIds> own;
  if (!layout_of) layout_of = &own.emplace(o.op.build());
  const std::vector<uint64_t> layouts = (*layout_of)(candidates);
  Selection sel = select_micro_kernels(score, weights, max_kernels, layouts, o.max_weight_layouts);
  runtime::ModuleSpec m;
  m.op = o.op;
  m.isa = codegen::host_target().isa;
  m.threads = o.threads;
  std::vector<std::vector<int64_t>> tree_shapes = declared;
  std::vector<int> labels = sel.assignment;
  for (int k : sel.kernels) m.kernels.push_back(candidates[k]);
  std::vector<std::vector<int64_t>> outside = outside_shapes(o.op);
  if (!outside.empty()) {
    std::vector<std::vector<double>> p = predict(m.kernels, outside);
    for (size_t s = 0; s < outside.size(); ++s) {
      tree_shapes.push_back(outside[s]);
      size_t best = 0;
      for (size_t k = 1; k < m.kernels.size(); ++k)
        if (p[k][s] > p[best][s]) best = k;
      labels.push_back(int(best));
    }
  }
  m.dispatch = build_dispatch_tree(tree_shapes, labels);
  const std::vector<uint64_t> kept = packed_layouts_read(*layout_of, m.kernels);
  notes.push_back(fmt::format("selected {} kernels (top-{} cover), dispatch tree depth {}{}",
                              m.kernels.size(), sel.top_k, m.dispatch.depth(),
                              kept.empty()
                                  ? ""
                                  : fmt::format(", weights packed in {} layout{}", kept.size(),
                                                kept.size() == 1 ? "" : "s")));
  return m;
}

namespace {

// `f` with only the kernels `keep` marks.
FinalScores only_kernels(const FinalScores& f, const std::vector<bool>& keep) {
  FinalScores out;
  out.measured = f.measured;
  out.score.resize(f.score.size());
  if (!f.disturbed.empty()) out.disturbed.resize(f.disturbed.size());
  for (size_t k = 0; k < f.kernels.size(); ++k) {
    if (!keep[k]) continue;
    out.kernels.push_back(f.kernels[k]);
    for (size_t s = 0; s < f.score.size(); ++s) out.score[s].push_back(f.score[s][k]);
    for (size_t s = 0; s < out.disturbed.size(); ++s) out.disturbed[s].push_back(f.disturbed[s][k]);
  }
  return out;
}

// Measures each window not yet in the records side by side, appending its results as
// `origin`, and says so on stderr as `what` (unless quiet); returns how many were
// measured and how long it took.
std::pair<int, double> measure_windows(const TuneOptions& o, RecordFile& records,
                                       Measurer& measurer,
                                       const std::vector<FinalistWindow>& windows, Origin origin,
                                       const char* what) {
  auto start = std::chrono::steady_clock::now();
  int measured = 0;
  for (const FinalistWindow& w : windows) {
    if (window_done(w, records.records(), origin)) continue;
    std::vector<MeasureResult> r = measurer.measure_side_by_side(w.kernels, w.shape);
    for (size_t i = 0; i < r.size(); ++i) {
      records.append(to_record(w.kernels[i], w.shape, origin, r[i]));
      ++measured;
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!o.quiet && measured > 0)
    fmt::print(stderr, "{}{}: {} measured side by side on {} shapes in {:.1f} s\n",
               o.label.empty() ? "" : o.label + ": ", what, measured, windows.size(), seconds);
  return {measured, seconds};
}

}  // namespace

runtime::ModuleSpec select_with_finals(const TuneOptions& o, RecordFile& records,
                                       Measurer& measurer, const PredictAt& predict,
                                       const std::vector<schedule::AnySchedule>& candidates,
                                       const std::vector<std::vector<double>>& score,
                                       std::vector<std::string>& notes) {
  std::vector<std::vector<int64_t>> shapes = o.op.declared_shapes();
  LayoutIds layout_of(o.op.build());
  std::vector<FinalistWindow> windows = plan_finalists(
      shapes, candidates, score, o.finalists, measured_best(shapes, candidates, records.records()));
  if (windows.empty())
    return build_module(o, predict, candidates, score, o.max_kernels, notes, &layout_of);
  auto [measured_now, seconds] =
      measure_windows(o, records, measurer, windows, Origin::Final, "finalists");
  FinalScores finals =
      final_scores(shapes, windows, records.records(),
                   [&](const std::vector<schedule::AnySchedule>& k) { return predict(k, shapes); });
  notes.push_back(fmt::format(
      "finalists: {} kernels side by side on {} shapes ({} measured in this run, {:.1f} s; "
      "{} paired numbers decide)",
      finals.kernels.size(), windows.size(), measured_now, seconds, finals.measured));
  runtime::ModuleSpec first =
      build_module(o, predict, finals.kernels, finals.score, o.max_kernels, notes, &layout_of);
  if (first.kernels.size() < 2 || !o.finalists.crosscheck) return first;
  // The crosscheck (tune/finalists.h): the selected kernels and the first challengers side
  // by side on each shape of the finals, the other challengers with them where the finals
  // measured them, then the selection and the dispatch decided again. The challengers are
  // finalists the budget of weight layouts lets the selection take beside its kernels: a
  // kernel in a layout it cannot keep would take a challenger's place for nothing.
  std::vector<schedule::AnySchedule> pool = first.kernels;
  const std::vector<schedule::AnySchedule> challengers = crosscheck_challengers(
      shapes, windows,
      only_kernels(finals, within_layout_budget(o, layout_of, first.kernels, finals.kernels)),
      first.kernels, o.finalists.challengers + o.finalists.local_challengers);
  pool.insert(pool.end(), challengers.begin(), challengers.end());
  const std::vector<FinalistWindow> cross =
      plan_crosscheck(windows, first.kernels, challengers, o.finalists.challengers);
  const size_t everywhere = std::min(challengers.size(), size_t(o.finalists.challengers));
  auto [checked_now, check_seconds] =
      measure_windows(o, records, measurer, cross, Origin::Crosscheck, "crosscheck");
  const std::vector<std::vector<double>> pool_predicted = predict(pool, shapes);
  FinalScores checked =
      final_scores_from(shapes, pool, pool_predicted, records.records(), {Origin::Crosscheck});
  notes.push_back(fmt::format(
      "crosscheck: the {} selected kernels and {} challengers side by side on {} shapes, {} "
      "more challengers where the finals measured them ({} measured in this run, {:.1f} s)",
      first.kernels.size(), everywhere, cross.size(), challengers.size() - everywhere, checked_now,
      check_seconds));
  runtime::ModuleSpec second =
      build_module(o, predict, checked.kernels, checked.score, o.max_kernels, notes, &layout_of);
  // The dispatch check (tune/finalists.h): the shapes between the finals' samples, each
  // on the few selected kernels that score best there, side by side; then decided the
  // last time from every paired number.
  std::vector<std::vector<double>> second_score(shapes.size());
  for (const schedule::AnySchedule& k : second.kernels) {
    const size_t i = size_t(std::find(pool.begin(), pool.end(), k) - pool.begin());
    for (size_t s = 0; s < shapes.size(); ++s) second_score[s].push_back(checked.score[s][i]);
  }
  std::vector<std::vector<int64_t>> sampled;
  for (const FinalistWindow& w : windows) sampled.push_back(w.shape);
  // With the kernel the search measured fastest there: a selected one (or one with the
  // same loops there), or an unselected one well ahead of them.
  SameAt same_at;
  std::optional<ShapeExtents> extents;
  if (schedule::kind_of_operator(o.op) == schedule::Kind::Contraction) {
    extents.emplace(o.op.build(), shapes);
    same_at = [&](size_t s, const schedule::AnySchedule& a, const schedule::AnySchedule& b) {
      return same_loops_at(std::get<schedule::MicroKernelSchedule>(a),
                           std::get<schedule::MicroKernelSchedule>(b), (*extents)[s]);
    };
  }
  std::vector<std::optional<schedule::AnySchedule>> challenged = dispatch_challengers(
      shapes, candidates, records.records(), second.kernels, second_score, same_at);
  for (std::optional<schedule::AnySchedule>& c : challenged)
    if (c && !within_layout_budget(o, layout_of, second.kernels, {*c}).front()) c.reset();
  const std::vector<FinalistWindow> between = plan_dispatch_check(
      shapes, second.kernels, second_score, sampled, o.finalists.dispatch_check, challenged);
  if (between.empty()) return second;
  auto [between_now, between_seconds] =
      measure_windows(o, records, measurer, between, Origin::DispatchCheck, "dispatch check");
  // The challengers paired in a window join the kernels the last selection decides among.
  std::vector<schedule::AnySchedule> last_pool = pool;
  const schedule::AnyScheduleSet selected(second.kernels.begin(), second.kernels.end());
  schedule::AnyScheduleSet in_pool(pool.begin(), pool.end()), paired;
  int challenged_shapes = 0;
  for (const FinalistWindow& w : between)
    for (const schedule::AnySchedule& k : w.kernels) {
      if (selected.count(k)) continue;
      ++challenged_shapes;
      paired.insert(k);
      if (in_pool.insert(k).second) last_pool.push_back(k);
    }
  FinalScores last =
      final_scores_from(shapes, last_pool, predict(last_pool, shapes), records.records(),
                        {Origin::Crosscheck, Origin::DispatchCheck});
  notes.push_back(fmt::format(
      "dispatch check: the best {} of the {} selected kernels side by side on {} more shapes, "
      "with {} challengers on {} of them ({} measured in this run, {:.1f} s)",
      o.finalists.dispatch_check, second.kernels.size(), between.size(), paired.size(),
      challenged_shapes, between_now, between_seconds));
  return build_module(o, predict, last.kernels, last.score, o.max_kernels, notes, &layout_of);
}

}  // namespace dietcode::tune
