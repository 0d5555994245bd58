#include "tune/select.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>

#include "support/error.h"

namespace dietcode::tune {

namespace {

// A kernel earns a spare slot, or a swap in, only by making some shape at least this much
// faster than the kernels already chosen.
constexpr double kFillGain = 0.03;

// A layout budget chooses among this many layouts, the best on their own (2^12 subsets).
constexpr size_t kLayoutPool = 12;
static_assert(kLayoutPool < 32, "subsets of the pool are bits of a uint32_t");

// Each row divided by its best: 1 for a shape's best kernel.
std::vector<std::vector<double>> normalized(std::vector<std::vector<double>> score) {
  for (std::vector<double>& row : score) {
    const double best = *std::max_element(row.begin(), row.end());
    for (double& x : row) x = best > 0 ? x / best : 0.0;
  }
  return score;
}

// The weighted sum over the shapes of log(best[s]): the log of the weighted geomean the
// tables report, with best[s] a shape's best normalized score among some kernels.
double weighted_log_sum(const std::vector<double>& best, const std::vector<double>& weights) {
  double sum = 0;
  for (size_t s = 0; s < best.size(); ++s) sum += weights[s] * std::log(std::max(best[s], 1e-6));
  return sum;
}

// One greedy cover at a given k; returns the chosen kernel indices.
std::vector<int> greedy_cover(const std::vector<std::vector<double>>& norm,
                              const std::vector<double>& weights, int k) {
  size_t shapes = norm.size(), kernels = norm[0].size();
  // covers[s]: the top-k kernels of shape s.
  std::vector<std::vector<int>> top(shapes);
  for (size_t s = 0; s < shapes; ++s) {
    std::vector<int> idx(kernels);
    std::iota(idx.begin(), idx.end(), 0);
    size_t kk = std::min<size_t>(size_t(k), kernels);
    std::partial_sort(idx.begin(), idx.begin() + kk, idx.end(),
                      [&](int a, int b) { return norm[s][a] > norm[s][b]; });
    top[s].assign(idx.begin(), idx.begin() + kk);
  }
  std::vector<bool> covered(shapes, false);
  std::vector<int> chosen;
  size_t left = shapes;
  while (left > 0) {
    std::vector<double> gain(kernels, 0.0);
    for (size_t s = 0; s < shapes; ++s)
      if (!covered[s])
        for (int j : top[s]) gain[j] += weights[s] * norm[s][j];
    int best = int(std::max_element(gain.begin(), gain.end()) - gain.begin());
    chosen.push_back(best);
    for (size_t s = 0; s < shapes; ++s)
      if (!covered[s] && std::find(top[s].begin(), top[s].end(), best) != top[s].end()) {
        covered[s] = true;
        --left;
      }
  }
  return chosen;
}

// The cover stops once every shape has one of its top-k kernels, which can leave a shape
// well below its best (often a short one: its weight in the cover is one shape's, and a
// kernel serving it and its neighbours "well enough" wins) while the budget still has
// room. Spare slots go, one at a time, to the kernel that most raises the summed weight *
// score / best over the shapes, as long as it makes some shape at least kFillGain faster
// than the best kernel already chosen for it.
void fill_spare_slots(const std::vector<std::vector<double>>& norm,
                      const std::vector<double>& weights, int max_kernels,
                      std::vector<int>& chosen) {
  const size_t shapes = norm.size(), kernels = norm[0].size();
  std::vector<double> current(shapes, 0.0);
  for (size_t s = 0; s < shapes; ++s)
    for (int j : chosen) current[s] = std::max(current[s], norm[s][j]);
  while (int(chosen.size()) < max_kernels) {
    int best = -1;
    double best_gain = 0;
    for (size_t j = 0; j < kernels; ++j) {
      if (std::find(chosen.begin(), chosen.end(), int(j)) != chosen.end()) continue;
      double gain = 0;
      bool helps = false;
      for (size_t s = 0; s < shapes; ++s) {
        if (norm[s][j] <= current[s]) continue;
        gain += weights[s] * (norm[s][j] - current[s]);
        helps |= norm[s][j] >= current[s] * (1 + kFillGain);
      }
      if (helps && gain > best_gain) {
        best = int(j);
        best_gain = gain;
      }
    }
    if (best < 0) return;
    chosen.push_back(best);
    for (size_t s = 0; s < shapes; ++s) current[s] = std::max(current[s], norm[s][best]);
  }
}

// The cover and its spare slots decide kernel by kernel, and a top-k cover counts a shape
// covered by any of its k best: with every slot taken, a shape can be left on its second
// kernel far below its first (qkv at M = 5, cold weights: a 6 x 64 tile at 55 GFLOP/s where
// a 5 x 80 tile measured 66 side by side, 0.83x). Then single swaps: a chosen kernel
// exchanged for one left out, the swap that most raises the weighted sum of log(best
// chosen score / best score) over the shapes (the geomean the tables report), as long as
// the newcomer makes some shape at least kFillGain faster; at most a few rounds.
void improve_by_swaps(const std::vector<std::vector<double>>& norm,
                      const std::vector<double>& weights, std::vector<int>& chosen) {
  const size_t shapes = norm.size(), kernels = norm[0].size();
  auto objective = [&](const std::vector<int>& set) {
    std::vector<double> best(shapes, 0.0);
    for (size_t s = 0; s < shapes; ++s)
      for (int j : set) best[s] = std::max(best[s], norm[s][j]);
    return weighted_log_sum(best, weights);
  };
  for (size_t round = 0; round < 2 * chosen.size(); ++round) {
    // Which left-out kernels make some shape kFillGain faster than the chosen ones.
    std::vector<double> current(shapes, 0.0);
    for (size_t s = 0; s < shapes; ++s)
      for (int c : chosen) current[s] = std::max(current[s], norm[s][c]);
    std::vector<int> newcomers;
    for (size_t j = 0; j < kernels; ++j) {
      if (std::find(chosen.begin(), chosen.end(), int(j)) != chosen.end()) continue;
      for (size_t s = 0; s < shapes; ++s)
        if (norm[s][j] >= current[s] * (1 + kFillGain)) {
          newcomers.push_back(int(j));
          break;
        }
    }
    double best_value = objective(chosen) + 1e-9;
    std::vector<int> best_set;
    for (size_t p = 0; p < chosen.size(); ++p)
      for (int j : newcomers) {
        std::vector<int> trial = chosen;
        trial[p] = j;
        const double value = objective(trial);
        if (value > best_value) {
          best_value = value;
          best_set = trial;
        }
      }
    if (best_set.empty()) return;
    chosen = best_set;
  }
}

// The columns whose packed layout is among the `max_layouts` kept (see the header), with
// those that read the weights as given; every column when no limit applies.
std::vector<int> columns_within_layout_budget(const std::vector<std::vector<double>>& norm,
                                              const std::vector<double>& weights,
                                              const std::vector<uint64_t>& layouts,
                                              int max_layouts) {
  const size_t shapes = norm.size(), kernels = norm[0].size();
  std::vector<int> all(kernels);
  std::iota(all.begin(), all.end(), 0);
  if (max_layouts <= 0 || layouts.empty()) return all;
  DC_INTERNAL_CHECK(layouts.size() == kernels, "{} packed layouts for {} kernels", layouts.size(),
                    kernels);
  // best[u][s]: the best normalized score of layout u's kernels on shape s; row 0 for the
  // kernels without packed weights, which every choice keeps.
  std::vector<uint64_t> ids{0};
  std::vector<std::vector<double>> best(1, std::vector<double>(shapes, 0.0));
  for (size_t j = 0; j < kernels; ++j) {
    size_t u = std::find(ids.begin(), ids.end(), layouts[j]) - ids.begin();
    if (u == ids.size()) {
      ids.push_back(layouts[j]);
      best.emplace_back(shapes, 0.0);
    }
    for (size_t s = 0; s < shapes; ++s) best[u][s] = std::max(best[u][s], norm[s][j]);
  }
  const int packed = int(ids.size()) - 1;
  if (packed <= max_layouts) return all;
  auto objective = [&](const std::vector<int>& kept) {
    std::vector<double> b = best[0];
    for (size_t s = 0; s < shapes; ++s)
      for (int u : kept) b[s] = std::max(b[s], best[u][s]);
    return weighted_log_sum(b, weights);
  };
  // Every choice of max_layouts among the kLayoutPool best layouts on their own (ties in
  // the order the kernels came).
  std::vector<int> pool(packed);
  std::iota(pool.begin(), pool.end(), 1);
  std::vector<double> alone(ids.size());
  for (int u : pool) alone[u] = objective({u});
  std::stable_sort(pool.begin(), pool.end(), [&](int a, int b) { return alone[a] > alone[b]; });
  pool.resize(std::min<size_t>(pool.size(), kLayoutPool));
  const int choose = std::min<int>(max_layouts, int(pool.size()));
  std::vector<int> kept_best;
  double value_best = -std::numeric_limits<double>::infinity();
  for (uint32_t mask = 1; mask < (1u << pool.size()); ++mask) {
    if (std::popcount(mask) != choose) continue;
    std::vector<int> kept;
    for (size_t i = 0; i < pool.size(); ++i)
      if (mask & (1u << i)) kept.push_back(pool[i]);
    const double value = objective(kept);
    if (value > value_best) {
      value_best = value;
      kept_best = kept;
    }
  }
  DC_INTERNAL_CHECK(!kept_best.empty(), "no choice of {} of {} layouts scored", choose,
                    pool.size());
  std::vector<int> out;
  for (size_t j = 0; j < kernels; ++j) {
    size_t u = std::find(ids.begin(), ids.end(), layouts[j]) - ids.begin();
    if (u == 0 || std::find(kept_best.begin(), kept_best.end(), int(u)) != kept_best.end())
      out.push_back(int(j));
  }
  return out;
}

}  // namespace

Selection select_micro_kernels(const std::vector<std::vector<double>>& score,
                               const std::vector<double>& weights, int max_kernels,
                               const std::vector<uint64_t>& layouts, int max_layouts) {
  if (score.empty() || score[0].empty())
    user_error("selection: no measured micro-kernel to select from (every trial failed?)");
  // The cover runs on the columns the layout budget keeps; `columns` maps them back.
  const std::vector<int> columns =
      columns_within_layout_budget(normalized(score), weights, layouts, max_layouts);
  DC_INTERNAL_CHECK(!columns.empty(), "the layout budget kept no kernel");
  std::vector<std::vector<double>> kept(score.size());
  for (size_t s = 0; s < score.size(); ++s)
    for (int j : columns) kept[s].push_back(score[s][j]);
  const size_t shapes = kept.size(), kernels = kept[0].size();
  const std::vector<std::vector<double>> norm = normalized(kept);
  Selection out;
  for (int k = 1;; k = std::max(k + 1, k * 3 / 2)) {
    out.kernels = greedy_cover(norm, weights, k);
    out.top_k = k;
    if (int(out.kernels.size()) <= max_kernels || k >= int(kernels)) break;
  }
  fill_spare_slots(norm, weights, max_kernels, out.kernels);
  improve_by_swaps(norm, weights, out.kernels);
  out.assignment.resize(shapes);
  for (size_t s = 0; s < shapes; ++s) {
    int best = 0;
    for (size_t c = 1; c < out.kernels.size(); ++c)
      if (kept[s][out.kernels[c]] > kept[s][out.kernels[best]]) best = int(c);
    out.assignment[s] = best;
  }
  // Drop kernels no shape ended up assigned to.
  std::vector<int> used;
  std::vector<int> remap(out.kernels.size(), -1);
  for (size_t c = 0; c < out.kernels.size(); ++c)
    if (std::count(out.assignment.begin(), out.assignment.end(), int(c))) {
      remap[c] = int(used.size());
      used.push_back(out.kernels[c]);
    }
  for (int& a : out.assignment) a = remap[a];
  out.kernels.clear();
  for (int j : used) out.kernels.push_back(columns[j]);
  return out;
}

dispatch::DecisionTree build_dispatch_tree(const std::vector<std::vector<int64_t>>& shapes,
                                           const std::vector<int>& labels) {
  return dispatch::DecisionTree::fit(shapes, labels);
}

}  // namespace dietcode::tune
