#include "tune/finalists.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "tune/analysis.h"

namespace dietcode::tune {

namespace {

using schedule::AnySchedule;

// Indices of about `count` declared shapes (sorted by their first variable) to measure
// side by side: the first `dense` of them, `count` spread geometrically over the list
// (geometric_positions), plus count / 4 spread evenly, both ends included. Geometric
// because a kernel's padding and occupancy change fastest at small extents (a 4-row tile
// wastes half its work at M = 2, nothing at M = 4, and is as good at 100 as at 101): an
// even spread over M = 1..128 would sample only 1 and 13 below 13, and the kernels that
// win at 2 or 3 would never reach the finals. Every one of the first `dense`, since there
// each extent has its own best tile height (M = 8 and 16 fall between 7, 10, 13 and 18 of
// the geometric spread; the dispatch chose a 7-row tile there from predictions, 0.65-0.83
// of the sweep's best kernel). The even share keeps the large shapes sampled too.
std::vector<size_t> spread_sample(size_t n, int count, int dense) {
  std::vector<size_t> out = geometric_positions(n, count);
  if (out.size() >= n || count <= 1) return out;
  int even = std::max(2, count / 4);
  for (int i = 0; i < even; ++i)
    out.push_back(size_t(std::llround(double(i) * double(n - 1) / double(even - 1))));
  for (size_t i = 0; i < std::min(n, size_t(std::max(0, dense))); ++i) out.push_back(i);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The candidates of one shape, best first.
std::vector<size_t> ranked(const std::vector<double>& row) {
  std::vector<size_t> k(row.size());
  std::iota(k.begin(), k.end(), 0);
  std::stable_sort(k.begin(), k.end(), [&](size_t a, size_t b) { return row[a] > row[b]; });
  return k;
}

}  // namespace

std::vector<FinalistWindow> plan_finalists(const std::vector<std::vector<int64_t>>& declared,
                                           const std::vector<AnySchedule>& candidates,
                                           const std::vector<std::vector<double>>& score,
                                           const FinalistParams& params,
                                           const std::vector<int>& measured_best) {
  std::vector<FinalistWindow> out;
  if (candidates.empty()) return out;
  std::vector<size_t> sample = spread_sample(declared.size(), params.shapes, params.dense);
  std::vector<std::vector<size_t>> best;
  for (size_t s : sample) best.push_back(ranked(score[s]));
  for (size_t j = 0; j < sample.size(); ++j) {
    FinalistWindow w;
    w.shape = declared[sample[j]];
    schedule::AnyScheduleSet in;
    auto add = [&](size_t k) {
      if (int(w.kernels.size()) < params.max_per_window && in.insert(candidates[k]).second)
        w.kernels.push_back(candidates[k]);
    };
    if (sample[j] < measured_best.size() && measured_best[sample[j]] >= 0)
      add(size_t(measured_best[sample[j]]));
    for (int r = 0; r < params.per_shape && size_t(r) < best[j].size(); ++r) add(best[j][r]);
    // The neighbours' winners: where the tree's boundary between them falls is measured.
    if (j > 0) add(best[j - 1][0]);
    if (j + 1 < sample.size()) add(best[j + 1][0]);
    out.push_back(std::move(w));
  }
  return out;
}

namespace {

// For each declared shape, the candidate whose record there (of the search or its
// probes) is fastest, with its GFLOP/s, or {-1, 0}.
std::vector<std::pair<int, double>> fastest_measured(
    const std::vector<std::vector<int64_t>>& declared, const std::vector<AnySchedule>& candidates,
    const std::vector<TuningRecord>& records) {
  std::unordered_map<AnySchedule, int, schedule::AnyScheduleHash> index;
  for (size_t k = 0; k < candidates.size(); ++k) index.emplace(candidates[k], int(k));
  std::map<std::vector<int64_t>, size_t> shape_index;
  for (size_t s = 0; s < declared.size(); ++s) shape_index[declared[s]] = s;
  std::vector<std::pair<int, double>> best(declared.size(), {-1, 0.0});
  for (const TuningRecord& r : records) {
    if (is_side_by_side(r.origin) || !r.ok() || r.gflops <= 0) continue;
    auto k = index.find(r.schedule);
    auto s = shape_index.find(r.shape);
    if (k == index.end() || s == shape_index.end() || r.gflops <= best[s->second].second) continue;
    best[s->second] = {k->second, r.gflops};
  }
  return best;
}

}  // namespace

std::vector<int> measured_best(const std::vector<std::vector<int64_t>>& declared,
                               const std::vector<AnySchedule>& candidates,
                               const std::vector<TuningRecord>& records) {
  std::vector<int> best;
  for (auto [k, gflops] : fastest_measured(declared, candidates, records)) best.push_back(k);
  return best;
}

std::vector<std::optional<AnySchedule>> dispatch_challengers(
    const std::vector<std::vector<int64_t>>& declared, const std::vector<AnySchedule>& candidates,
    const std::vector<TuningRecord>& records, const std::vector<AnySchedule>& selected,
    const std::vector<std::vector<double>>& score, const SameAt& same_at) {
  const std::vector<std::pair<int, double>> fastest =
      fastest_measured(declared, candidates, records);
  std::vector<std::optional<AnySchedule>> out(declared.size());
  for (size_t s = 0; s < declared.size(); ++s) {
    auto [k, gflops] = fastest[s];
    if (k < 0) continue;
    const AnySchedule& best = candidates[size_t(k)];
    auto same = std::find_if(selected.begin(), selected.end(), [&](const AnySchedule& c) {
      return c == best || (same_at && same_at(s, c, best));
    });
    if (same != selected.end()) {
      out[s] = *same;
      continue;
    }
    const double kept =
        score[s].empty() ? 0.0 : *std::max_element(score[s].begin(), score[s].end());
    if (gflops >= kept * (1 + kChallengerGain)) out[s] = candidates[size_t(k)];
  }
  return out;
}

bool window_done(const FinalistWindow& w, const std::vector<TuningRecord>& records, Origin origin) {
  schedule::AnyScheduleSet have;
  for (const TuningRecord& r : records)
    if (r.origin == origin && r.shape == w.shape) have.insert(r.schedule);
  for (const AnySchedule& k : w.kernels)
    if (!have.count(k)) return false;
  return true;
}

std::vector<FinalistWindow> plan_crosscheck(const std::vector<FinalistWindow>& windows,
                                            const std::vector<AnySchedule>& selected,
                                            const std::vector<AnySchedule>& challengers,
                                            int everywhere) {
  std::vector<FinalistWindow> out;
  for (const FinalistWindow& w : windows) {
    FinalistWindow c{w.shape, selected};
    for (size_t i = 0; i < challengers.size(); ++i)
      if (int(i) < everywhere ||
          std::find(w.kernels.begin(), w.kernels.end(), challengers[i]) != w.kernels.end())
        c.kernels.push_back(challengers[i]);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<AnySchedule> finalists_of(const std::vector<FinalistWindow>& windows) {
  std::vector<AnySchedule> out;
  schedule::AnyScheduleSet seen;
  for (const FinalistWindow& w : windows)
    for (const AnySchedule& k : w.kernels)
      if (seen.insert(k).second) out.push_back(k);
  return out;
}

FinalScores final_scores_from(const std::vector<std::vector<int64_t>>& declared,
                              std::vector<AnySchedule> kernels,
                              const std::vector<std::vector<double>>& predicted,
                              const std::vector<TuningRecord>& records,
                              const std::vector<Origin>& origins) {
  FinalScores out;
  out.kernels = std::move(kernels);
  const size_t K = out.kernels.size(), S = declared.size();
  std::unordered_map<AnySchedule, size_t, schedule::AnyScheduleHash> index;
  for (size_t k = 0; k < K; ++k) index[out.kernels[k]] = k;
  std::map<std::vector<int64_t>, size_t> shape_index;
  for (size_t s = 0; s < S; ++s) shape_index[declared[s]] = s;
  // The latest final of each (kernel, shape): a re-run window replaces an older one.
  std::map<std::pair<size_t, size_t>, double> final_gflops;
  std::map<std::pair<size_t, size_t>, bool> final_disturbed;
  for (const TuningRecord& r : records) {
    if (std::find(origins.begin(), origins.end(), r.origin) == origins.end()) continue;
    auto k = index.find(r.schedule);
    auto s = shape_index.find(r.shape);
    if (k == index.end() || s == shape_index.end()) continue;
    final_gflops[{k->second, s->second}] = r.ok() ? r.gflops : 0.0;
    final_disturbed[{k->second, s->second}] = r.ok() && !r.clean();
  }
  out.measured = int(final_gflops.size());
  out.score.assign(S, std::vector<double>(K, 0.0));
  for (const auto& [ks, d] : final_disturbed) {
    if (!d) continue;
    if (out.disturbed.empty()) out.disturbed.assign(S, std::vector<char>(K, 0));
    out.disturbed[ks.second][ks.first] = 1;
  }
  for (size_t k = 0; k < K; ++k) {
    // Measured/predicted on the shapes where this finalist was measured side by side.
    std::vector<std::pair<size_t, double>> ratio;  // (shape, log ratio)
    for (size_t s = 0; s < S; ++s) {
      auto f = final_gflops.find({k, s});
      if (f == final_gflops.end()) continue;
      out.score[s][k] = f->second;
      if (f->second > 0 && predicted[k][s] > 0)
        ratio.push_back({s, std::log(f->second / predicted[k][s])});
    }
    for (size_t s = 0; s < S; ++s) {
      if (final_gflops.count({k, s})) continue;
      double log_ratio = 0;
      if (!ratio.empty()) {
        // Linear in the first shape variable between the nearest measured shapes.
        auto above =
            std::find_if(ratio.begin(), ratio.end(), [&](const auto& p) { return p.first > s; });
        if (above == ratio.begin()) {
          log_ratio = above->second;
        } else if (above == ratio.end()) {
          log_ratio = ratio.back().second;
        } else {
          auto below = above - 1;
          double x0 = double(declared[below->first][0]), x1 = double(declared[above->first][0]);
          double t = x1 > x0 ? (double(declared[s][0]) - x0) / (x1 - x0) : 0.5;
          log_ratio = below->second + t * (above->second - below->second);
        }
      }
      out.score[s][k] = predicted[k][s] * std::exp(log_ratio);
    }
  }
  // On a shape measured side by side, a kernel that was not in the window ranks no higher
  // than the slowest kernel that was: the window holds the shape's best candidates, and
  // a ratio carried over from other shapes must not outbid a paired measurement (a fixed
  // cost per call, say, that the model does not know shows up only where measured).
  std::vector<double> slowest(S, INFINITY);
  for (const auto& [ks, g] : final_gflops)
    if (g > 0) slowest[ks.second] = std::min(slowest[ks.second], g);
  for (size_t s = 0; s < S; ++s) {
    if (!std::isfinite(slowest[s])) continue;
    for (size_t k = 0; k < K; ++k)
      if (!final_gflops.count({k, s})) out.score[s][k] = std::min(out.score[s][k], slowest[s]);
  }
  return out;
}

std::vector<FinalistWindow> plan_dispatch_check(
    const std::vector<std::vector<int64_t>>& declared, const std::vector<AnySchedule>& kernels,
    const std::vector<std::vector<double>>& score,
    const std::vector<std::vector<int64_t>>& measured, int per_shape,
    const std::vector<std::optional<AnySchedule>>& challengers) {
  std::vector<FinalistWindow> out;
  if (per_shape < 2 || kernels.empty()) return out;
  const std::set<std::vector<int64_t>> sampled(measured.begin(), measured.end());
  for (size_t s = 0; s < declared.size(); ++s) {
    if (sampled.count(declared[s])) continue;
    std::vector<size_t> order(kernels.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return score[s][a] > score[s][b]; });
    const double best = score[s][order.front()];
    if (!(best > 0)) continue;  // no kernel computes it
    FinalistWindow w{declared[s], {}};
    for (size_t k : order) {
      if (int(w.kernels.size()) == per_shape || !(score[s][k] >= (1 - kDispatchCheckMargin) * best))
        break;
      w.kernels.push_back(kernels[k]);
    }
    if (s < challengers.size() && challengers[s] &&
        std::find(w.kernels.begin(), w.kernels.end(), *challengers[s]) == w.kernels.end())
      w.kernels.push_back(*challengers[s]);
    if (w.kernels.size() >= 2) out.push_back(std::move(w));
  }
  return out;
}

std::vector<AnySchedule> crosscheck_challengers(const std::vector<std::vector<int64_t>>& declared,
                                                const std::vector<FinalistWindow>& windows,
                                                const FinalScores& finals,
                                                const std::vector<AnySchedule>& selected,
                                                int count) {
  schedule::AnyScheduleSet chosen(selected.begin(), selected.end());
  std::map<std::vector<int64_t>, size_t> shape_index;
  for (size_t s = 0; s < declared.size(); ++s) shape_index[declared[s]] = s;
  std::map<size_t, double> gain;  // finalist -> its largest gain over the selection
  for (const FinalistWindow& w : windows) {
    auto it = shape_index.find(w.shape);
    if (it == shape_index.end()) continue;
    const size_t s = it->second;
    const std::vector<double>& row = finals.score[s];
    double kept = 0;
    size_t kept_k = row.size();
    for (size_t k = 0; k < row.size(); ++k)
      if (chosen.count(finals.kernels[k]) && row[k] > kept) {
        kept = row[k];
        kept_k = k;
      }
    size_t best = ranked(row).front();
    const bool unsure =
        finals.disturbed_at(s, best) || (kept_k < row.size() && finals.disturbed_at(s, kept_k));
    if (chosen.count(finals.kernels[best]) || row[best] <= kept ||
        (!unsure && row[best] < kept * (1 + kChallengerGain)))
      continue;
    gain[best] = std::max(gain[best], row[best] / std::max(kept, 1e-30));
  }
  std::vector<std::pair<double, size_t>> by_gain;
  for (auto [k, g] : gain) by_gain.push_back({g, k});
  std::sort(by_gain.begin(), by_gain.end(), std::greater<>());
  std::vector<AnySchedule> out;
  for (size_t i = 0; i < by_gain.size() && int(i) < count; ++i)
    out.push_back(finals.kernels[by_gain[i].second]);
  return out;
}

}  // namespace dietcode::tune
