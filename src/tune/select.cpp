#include "tune/select.h"

#include <algorithm>
#include <numeric>

#include "support/error.h"

namespace dietcode::tune {

namespace {

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

}  // namespace

Selection select_micro_kernels(const std::vector<std::vector<double>>& score,
                               const std::vector<double>& weights, int max_kernels) {
  if (score.empty() || score[0].empty())
    user_error("selection: no measured micro-kernel to select from (every trial failed?)");
  size_t shapes = score.size(), kernels = score[0].size();
  std::vector<std::vector<double>> norm = score;
  for (size_t s = 0; s < shapes; ++s) {
    double best = *std::max_element(score[s].begin(), score[s].end());
    for (size_t j = 0; j < kernels; ++j) norm[s][j] = best > 0 ? score[s][j] / best : 0.0;
  }
  Selection out;
  for (int k = 1;; k = std::max(k + 1, k * 3 / 2)) {
    out.kernels = greedy_cover(norm, weights, k);
    out.top_k = k;
    if (int(out.kernels.size()) <= max_kernels || k >= int(kernels)) break;
  }
  out.assignment.resize(shapes);
  for (size_t s = 0; s < shapes; ++s) {
    int best = 0;
    for (size_t c = 1; c < out.kernels.size(); ++c)
      if (score[s][out.kernels[c]] > score[s][out.kernels[best]]) best = int(c);
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
  out.kernels = used;
  return out;
}

dispatch::DecisionTree build_dispatch_tree(const std::vector<std::vector<int64_t>>& shapes,
                                           const std::vector<int>& labels) {
  return dispatch::DecisionTree::fit(shapes, labels);
}

}  // namespace dietcode::tune
