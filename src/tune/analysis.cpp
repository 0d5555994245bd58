#include "tune/analysis.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "ir/evaluate.h"
#include "support/int_math.h"

namespace dietcode::tune {

Extents ShapeExtents::at(const ops::Contraction& c, const te::Operator& op,
                         const std::vector<int64_t>& shape) {
  ir::Bindings b = op.bind(shape);
  Extents e;
  for (const ir::Expr& x : c.batch_extents) e.batch *= ir::evaluate_int(x, b);
  e.m = ir::evaluate_int(c.m_extent, b);
  e.n = ir::evaluate_int(c.n_extent, b);
  e.k = ir::evaluate_int(c.k_extent, b);
  return e;
}

ShapeExtents::ShapeExtents(const te::Operator& op,
                           const std::vector<std::vector<int64_t>>& shapes) {
  ops::Contraction c = ops::match_contraction(op);
  for (const auto& s : shapes) extents_.push_back(at(c, op, s));
}

double tile_rows_done(const schedule::MicroKernelSchedule& s, int64_t m) {
  const int64_t whole = m / s.mr * s.mr, edge = m - whole;
  if (edge == 0) return double(whole);
  if (s.vector_axis == schedule::Axis::K) return double(whole + s.mr);
  const int64_t width = schedule::vector_isa(s.isa).width;
  auto edge_rows = [&] {
    double rows = 0;
    for (const schedule::EdgePass& p :
         schedule::edge_passes(s.mr, s.nr / width, 4 * width, s.kc, edge))
      rows += double(p.rows) + kSubTileRows;
    return std::min(rows, double(s.mr));
  };
  // The search asks this for every candidate at every declared shape in every generation
  // (3.4 s of a 1000-trial joint run's evolution planned the edge passes again): remembered per
  // (tile, k block, edge rows), which pack into one key while each fits its field.
  const int64_t vectors = s.nr / width;
  if (s.mr >= 256 || vectors >= 256 || width >= 256 || s.kc >= (int64_t{1} << 24))
    return double(whole) + edge_rows();
  const uint64_t key = uint64_t(s.mr) | uint64_t(vectors) << 8 | uint64_t(width) << 16 |
                       uint64_t(edge) << 24 | uint64_t(s.kc) << 32;
  thread_local std::unordered_map<uint64_t, double> known;
  auto it = known.find(key);
  if (it == known.end()) it = known.emplace(key, edge_rows()).first;
  return double(whole) + it->second;
}

bool same_loops_at(const schedule::MicroKernelSchedule& a, const schedule::MicroKernelSchedule& b,
                   const Extents& e) {
  auto at = [&](schedule::MicroKernelSchedule s) {
    if (s.mc >= e.m) s.mc = 0;
    if (s.nc >= e.n) s.nc = 0;
    if (s.kc >= e.k) s.kc = 0;
    return s;
  };
  return at(a) == at(b);
}

double pad_ratio(const schedule::MicroKernelSchedule& s, const Extents& e) {
  double useful = double(e.m) * double(e.n);
  double done = tile_rows_done(s, e.m) * double(ceil_div(e.n, s.nr) * s.nr);
  return useful / done;
}

int64_t parallel_tasks(const schedule::MicroKernelSchedule& s, const Extents& e) {
  switch (s.parallel) {
    case schedule::ParallelAxis::M:
      return ceil_div(e.m, s.mc);
    case schedule::ParallelAxis::N:
      return ceil_div(e.n, s.nc);
    case schedule::ParallelAxis::Batch:
      return e.batch;
    case schedule::ParallelAxis::None:
      return 1;
  }
  return 1;
}

double OccupancyModel::occ(int64_t tasks) const {
  if (cores <= 1) return 1.0;
  // A serial schedule uses one core of P.
  double ideal = double(tasks) / double(ceil_div(tasks, cores) * cores);
  return std::pow(ideal, alpha);
}

void OccupancyModel::fit(const std::vector<Sample>& samples) {
  if (cores <= 1) return;
  std::map<int, std::vector<const Sample*>> groups;
  for (const Sample& s : samples)
    if (s.throughput > 0) groups[s.group].push_back(&s);
  // Only a kernel measured at task counts with different ideal occupancy says anything
  // about the exponent (4 and 8 tasks on 2 cores are both "full").
  OccupancyModel ideal{cores, 1.0};
  int usable = 0;
  for (auto& [g, v] : groups) {
    std::vector<double> distinct;
    for (const Sample* s : v) distinct.push_back(ideal.occ(s->tasks));
    std::sort(distinct.begin(), distinct.end());
    if (distinct.back() - distinct.front() > 1e-9) ++usable;
  }
  if (usable < 2) return;
  // Grid search: alpha in [0, 2]; the objective is the summed within-group variance of
  // log(throughput / occ).
  double best_alpha = alpha, best = INFINITY;
  for (int step = 0; step <= 80; ++step) {
    double a = step * 0.025;
    OccupancyModel trial{cores, a};
    double total = 0;
    for (auto& [g, v] : groups) {
      if (v.size() < 2) continue;
      double mean = 0;
      std::vector<double> x;
      for (const Sample* s : v) x.push_back(std::log(s->throughput / trial.occ(s->tasks)));
      for (double d : x) mean += d;
      mean /= double(x.size());
      for (double d : x) total += (d - mean) * (d - mean);
    }
    // Ties (no information) keep the exponent nearest the ideal machine's 1.
    if (total < best - 1e-12 ||
        (total <= best + 1e-12 && std::abs(a - 1.0) < std::abs(best_alpha - 1.0))) {
      best = total;
      best_alpha = a;
    }
  }
  alpha = best_alpha;
}

std::vector<size_t> geometric_positions(size_t n, int count) {
  std::vector<size_t> out;
  if (n == 0 || count <= 0) return out;
  if (size_t(count) >= n) {
    for (size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  if (count == 1) return {n - 1};
  size_t next = 0;
  for (int i = 0; i < count && next < n; ++i) {
    auto p = size_t(std::llround(std::pow(double(n), double(i) / double(count - 1)))) - 1;
    out.push_back(std::min(n - 1, std::max(next, p)));
    next = out.back() + 1;
  }
  return out;
}

}  // namespace dietcode::tune
