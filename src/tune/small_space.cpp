#include "tune/small_space.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "codegen/llvm/target.h"
#include "ir/evaluate.h"
#include "ops/attention.h"
#include "ops/row_op.h"
#include "ops/work.h"
#include "support/error.h"
#include "support/int_math.h"
#include "tune/cost_model.h"
#include "tune/progress.h"
#include "tune/trials.h"

namespace dietcode::tune {

using schedule::AnySchedule;
using schedule::AttentionSchedule;
using schedule::RowSchedule;

namespace {

std::vector<AnySchedule> row_space(schedule::Isa isa, int threads, bool reductions) {
  std::vector<AnySchedule> out;
  for (int64_t rows : {1, 2, 4, 8, 16, 32})
    for (int64_t unroll : {1, 2, 4, 8})
      for (auto passes : {schedule::ReductionPasses::Fused, schedule::ReductionPasses::Separate})
        for (int64_t interleave : {1, 4}) {
          if (!reductions && passes == schedule::ReductionPasses::Separate) continue;
          // Rows interleave to overlap their reductions (without any, nothing to overlap),
          // with at most 8 accumulators per reduction in flight.
          if (interleave > rows || (!reductions && interleave > 1) || interleave * unroll > 8)
            continue;
          RowSchedule s;
          s.isa = isa;
          s.rows_per_task = rows;
          s.unroll = unroll;
          s.parallel = threads > 1;
          s.passes = passes;
          s.interleave = interleave;
          out.push_back(s);
        }
  return out;
}

std::vector<AnySchedule> attention_space(schedule::Isa isa, int threads) {
  // One thread: no task loop at all (a pool of one still costs a round trip per call).
  std::vector<schedule::AttentionParallel> parallel{schedule::AttentionParallel::None};
  if (threads > 1)
    parallel = {schedule::AttentionParallel::Heads,
                schedule::AttentionParallel::HeadsAndQueryTiles};
  std::vector<AttentionSchedule> grid = schedule::attention_schedule_grid(
      isa, parallel, {1, 2, 4, 8, 12, 16, 24, 32}, {8, 16, 32, 64, 128}, {1, 2, 4, 6, 8});
  // The head dimension in the lanes: for the short sequences that leave query lanes empty.
  std::vector<AttentionSchedule> rows = schedule::attention_schedule_grid(
      isa, parallel, {1, 4, 16}, {16, 64, 128}, {1, 2, 4}, schedule::AttentionLanes::HeadDim);
  grid.insert(grid.end(), rows.begin(), rows.end());
  return {grid.begin(), grid.end()};
}

}  // namespace

SmallSpace::SmallSpace(const ops::OperatorSpec& op, schedule::Isa isa, int threads)
    : op_(op.build()),
      kind_(schedule::kind_of_operator(op)),
      width_(schedule::vector_isa(isa).width) {
  if (kind_ == schedule::Kind::Row)
    kernels_ = row_space(isa, threads, !ops::match_row_op(op_).reductions.empty());
  else if (kind_ == schedule::Kind::Attention)
    kernels_ = attention_space(isa, threads);
  else
    user_error("operator {}: a contraction; its space is the shape-generic micro-kernel space",
               op.op);
  for (const AnySchedule& k : kernels_) schedule::check_binds(k, op_);
}

KindExtents SmallSpace::extents(const std::vector<int64_t>& shape) const {
  ir::Bindings b = op_.bind(shape);
  KindExtents e;
  if (kind_ == schedule::Kind::Row) {
    ops::RowOp r = ops::match_row_op(op_);
    for (const ir::Expr& x : r.row_extents) e.rows *= ir::evaluate_int(x, b);
    e.length = ir::evaluate_int(r.length, b);
  } else {
    ops::AttentionOp a = ops::match_attention(op_);
    e.rows = a.slices;
    e.length = ir::evaluate_int(a.t, b);
    e.depth = a.head_dim;
  }
  return e;
}

double SmallSpace::pad(const AnySchedule& k, const KindExtents& e) const {
  if (const auto* a = std::get_if<AttentionSchedule>(&k)) {
    // Lanes along the head: every row and key computed, no lane of D wasted (D a multiple
    // of W, as BERT's 64).
    if (a->lanes == schedule::AttentionLanes::HeadDim)
      return double(e.depth) / double(round_up(e.depth, width_));
    double queries = double(ceil_div(e.length, a->query_tile) * a->row_vectors() * width_);
    double keys = double(round_up(e.length, a->unroll));
    return double(e.length) / queries * double(e.length) / keys;
  }
  // A row's masked tail costs a whole vector.
  return double(e.length) / double(round_up(e.length, width_));
}

int64_t SmallSpace::tasks(const AnySchedule& k, const KindExtents& e) const {
  if (const auto* a = std::get_if<AttentionSchedule>(&k)) {
    switch (a->parallel) {
      case schedule::AttentionParallel::None:
        return 1;
      case schedule::AttentionParallel::Heads:
        return e.rows;
      case schedule::AttentionParallel::HeadsAndQueryTiles:
        return e.rows * ceil_div(e.length, a->query_tile);
    }
    return 1;
  }
  const auto& r = std::get<RowSchedule>(k);
  return r.parallel ? ceil_div(e.rows, r.rows_per_task) : 1;
}

std::vector<float> SmallSpace::features(const AnySchedule& k, const KindExtents& e) const {
  std::vector<float> f{float(std::log2(double(e.rows))), float(std::log2(double(e.length))),
                       float(e.depth), float(e.length % width_)};
  if (const auto* a = std::get_if<AttentionSchedule>(&k)) {
    f.insert(f.end(),
             {float(a->query_tile), float(a->key_block), float(a->unroll), float(a->row_vectors()),
              float(int(a->parallel)), float(ceil_div(e.length, a->query_tile)), float(pad(k, e)),
              float(int(a->lanes))});
  } else {
    const auto& r = std::get<RowSchedule>(k);
    f.insert(f.end(),
             {float(r.rows_per_task), float(r.unroll), float(r.parallel), float(int(r.passes)),
              float(r.interleave), float(ceil_div(e.rows, r.rows_per_task)),
              float(ceil_div(e.length, width_ * r.unroll)), float(pad(k, e))});
  }
  return f;
}

namespace {

// f of every kernel of the space, and the predictions built on it.
class SmallModel {
 public:
  SmallModel(const SmallSpace& space, const std::vector<std::vector<int64_t>>& shapes, int threads)
      : space_(space), occ_{threads, 1.0} {
    for (const auto& s : shapes) ext_.push_back(space.extents(s));
    for (const AnySchedule& k : space.kernels()) {
      size_t best = 0;
      double best_value = -1;
      for (size_t s = 0; s < ext_.size(); ++s) {
        double v = analytic(k, ext_[s]);
        if (v >= best_value) best_value = v, best = s;  // ties: the larger shape
      }
      s_star_[k] = best;
    }
  }

  double analytic(const AnySchedule& k, const KindExtents& e) const {
    return occ_.occ(space_.tasks(k, e)) * space_.pad(k, e);
  }
  size_t s_star(const AnySchedule& k) const { return s_star_.at(k); }

  // From the clean records: each measured kernel's best intrinsic speed, and the learned
  // f_MK for the others once there are enough records.
  void fit(const std::vector<const TuningRecord*>& records) {
    measured_.clear();
    std::vector<std::vector<float>> x;
    std::vector<double> y;
    for (const TuningRecord* r : records) {
      KindExtents e = space_.extents(r->shape);
      double f = r->gflops / analytic(r->schedule, e);
      double& m = measured_[r->schedule];
      m = std::max(m, f);
      x.push_back(space_.features(r->schedule, e));
      y.push_back(f);
    }
    mean_ = 1;
    if (!measured_.empty()) {
      double log_sum = 0;
      for (const auto& [k, f] : measured_) log_sum += std::log(f);
      mean_ = std::exp(log_sum / double(measured_.size()));
    }
    if (y.size() >= ThroughputModel::kMinSamples) f_.train(x, y);
  }

  double f(const AnySchedule& k, const KindExtents& at) const {
    auto it = measured_.find(k);
    if (it != measured_.end()) return it->second;
    if (f_.trained()) return f_.predict({space_.features(k, at)})[0];
    return mean_;
  }

  // [kernel][shape]
  std::vector<std::vector<double>> predict(const std::vector<AnySchedule>& kernels,
                                           const std::vector<std::vector<int64_t>>& shapes) const {
    std::vector<KindExtents> ext;
    for (const auto& s : shapes) ext.push_back(space_.extents(s));
    std::vector<std::vector<double>> out(kernels.size(), std::vector<double>(shapes.size()));
    for (size_t k = 0; k < kernels.size(); ++k) {
      auto star = s_star_.find(kernels[k]);
      double fk = f(kernels[k], star != s_star_.end() ? ext_[star->second] : ext.back());
      for (size_t s = 0; s < shapes.size(); ++s) out[k][s] = fk * analytic(kernels[k], ext[s]);
    }
    return out;
  }

 private:
  const SmallSpace& space_;
  OccupancyModel occ_;
  std::vector<KindExtents> ext_;
  std::unordered_map<AnySchedule, size_t, schedule::AnyScheduleHash> s_star_;
  std::unordered_map<AnySchedule, double, schedule::AnyScheduleHash> measured_;
  ThroughputModel f_;
  double mean_ = 1;
};

}  // namespace

TuneReport tune_small_space(const TuneOptions& o, RecordFile& records, Measurer& measurer) {
  TuneReport report;
  SmallSpace space(o.op, codegen::host_target().isa, o.threads);
  std::vector<std::vector<int64_t>> shapes = o.op.declared_shapes();
  SmallModel model(space, shapes, o.threads);
  const int64_t budget = small_space_budget(o, space);
  std::string unit(ops::work_of(o.op.build(), shapes.back()).unit);
  Progress progress(o.label, budget, o.quiet, unit, o.whole);
  resume_joint_progress(progress, records, o);
  schedule::AnyScheduleSet tried;
  for (const TuningRecord& r : records.records())
    if (is_joint_trial(r.origin)) tried.insert(r.schedule);
  // Ties in fitness (every kernel alike before anything is measured) go in a random
  // order of the run's seed.
  std::vector<AnySchedule> order = space.kernels();
  std::mt19937_64 rng(o.seed * 1000003 + 17);
  std::shuffle(order.begin(), order.end(), rng);
  int round = 0;
  while (progress.done() < budget) {
    ++round;
    model.fit(clean_records(records.records()));
    std::vector<AnySchedule> open;
    for (const AnySchedule& k : order)
      if (!tried.count(k)) open.push_back(k);
    if (open.empty()) break;
    std::vector<std::vector<double>> p = model.predict(space.kernels(), shapes);
    std::vector<double> best(shapes.size(), 1e-30);
    for (const auto& row : p)
      for (size_t s = 0; s < shapes.size(); ++s) best[s] = std::max(best[s], row[s]);
    std::vector<std::vector<double>> q = model.predict(open, shapes);
    std::vector<double> fitness(open.size(), 0);
    for (size_t k = 0; k < open.size(); ++k)
      for (size_t s = 0; s < shapes.size(); ++s)
        fitness[k] = std::max(fitness[k], q[k][s] / best[s]);
    std::vector<size_t> rank(open.size());
    std::iota(rank.begin(), rank.end(), 0);
    std::stable_sort(rank.begin(), rank.end(),
                     [&](size_t a, size_t b) { return fitness[a] > fitness[b]; });
    int64_t count = std::min<int64_t>(
        {int64_t(o.search.measure_per_round), budget - progress.done(), int64_t(open.size())});
    std::vector<Trial> trials;
    for (int64_t i = 0; i < count; ++i) {
      const AnySchedule& k = open[rank[size_t(i)]];
      trials.push_back({{k, shapes[model.s_star(k)], ""}, Origin::Joint});
      tried.insert(k);
    }
    measure_and_record(measurer, records, trials, progress);
    double best_measured = 0;
    for (const TuningRecord& r : records.records())
      if (r.ok()) best_measured = std::max(best_measured, r.gflops);
    double log_best = 0;
    for (double b : best) log_best += std::log(b);
    progress.round_done(fmt::format("round {:2}", round), std::exp(log_best / double(best.size())),
                        best_measured);
  }
  count_trials(progress, report);
  // Selection, as in every joint run.
  std::vector<TuningRecord> trials_only = without_finals(records.records());
  model.fit(clean_records(trials_only));
  std::vector<const TuningRecord*> own = ok_records(trials_only);
  if (own.empty()) user_error("{}: no trial produced a correct kernel", o.op.describe());
  std::vector<AnySchedule> candidates;
  schedule::AnyScheduleSet seen;
  for (const TuningRecord* r : own)
    if (seen.insert(r->schedule).second) candidates.push_back(r->schedule);
  PredictAt predict = [&model](const std::vector<AnySchedule>& k,
                               const std::vector<std::vector<int64_t>>& s) {
    return model.predict(k, s);
  };
  std::vector<std::vector<double>> score = candidate_scores(o.op, predict, candidates, own);
  report.module =
      select_with_finals(o, records, measurer, predict, candidates, score, report.notes);
  report.notes.push_back(fmt::format("space: {} {} schedules, {} measured", space.kernels().size(),
                                     to_string(schedule::kind_of_operator(o.op)), seen.size()));
  return report;
}

}  // namespace dietcode::tune
