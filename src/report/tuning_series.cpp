#include "report/tuning_series.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "support/error.h"

namespace dietcode::report {

std::vector<CurvePoint> tuning_curve(const std::vector<tune::TuningRecord>& records,
                                     const std::vector<std::vector<int64_t>>& shapes) {
  std::map<std::vector<int64_t>, double> best;  // declared shape -> best so far (0: none)
  for (const auto& s : shapes) best[s] = 0;
  // The geomean is kept as a running sum of logs, updated when a shape's best improves.
  double log_sum = 0;
  int64_t measured = 0;
  std::vector<CurvePoint> curve;
  for (size_t i = 0; i < records.size(); ++i) {
    const tune::TuningRecord& r = records[i];
    auto it = best.find(r.shape);
    if (r.ok() && r.gflops > 0 && it != best.end() && r.gflops > it->second) {
      if (it->second > 0) {
        log_sum -= std::log(it->second);
      } else {
        ++measured;
      }
      log_sum += std::log(r.gflops);
      it->second = r.gflops;
    }
    if (measured > 0)
      curve.push_back({int64_t(i + 1), std::exp(log_sum / double(measured)), measured});
  }
  return curve;
}

std::vector<ShapeRow> shape_table(const runtime::ModuleSpec& module,
                                  const std::vector<tune::TuningRecord>& records) {
  std::vector<std::vector<int64_t>> shapes = module.op.declared_shapes();
  std::vector<double> weights = module.op.declared_weights();
  DC_INTERNAL_CHECK(shapes.size() == weights.size(), "{} shapes, {} weights", shapes.size(),
                    weights.size());
  std::map<std::vector<int64_t>, size_t> index;
  std::vector<ShapeRow> rows(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    rows[i].shape = shapes[i];
    rows[i].weight = weights[i];
    rows[i].kernel = module.dispatch.select(shapes[i]);
    index[shapes[i]] = i;
  }
  // The dispatched kernel's numbers: the median of its records at the shape, as the
  // tuner's selection scores a measured (shape, kernel) pair.
  std::vector<std::vector<double>> selected(shapes.size());
  for (const tune::TuningRecord& r : records) {
    auto it = index.find(r.shape);
    if (!r.ok() || !(r.gflops > 0) || it == index.end()) continue;
    ShapeRow& row = rows[it->second];
    row.best_gflops = std::max(row.best_gflops, r.gflops);
    if (row.kernel >= 0 && size_t(row.kernel) < module.kernels.size() &&
        r.schedule == module.kernels[row.kernel])
      selected[it->second].push_back(r.gflops);
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    std::vector<double>& v = selected[i];
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    rows[i].selected_gflops = v[v.size() / 2];
  }
  return rows;
}

std::vector<KernelShare> kernel_shares(const runtime::ModuleSpec& module,
                                       const std::vector<ShapeRow>& rows) {
  std::vector<KernelShare> shares(module.kernels.size());
  std::vector<std::vector<std::pair<int64_t, int64_t>>> runs(module.kernels.size());
  double total_weight = 0;
  for (const ShapeRow& r : rows) total_weight += r.weight;
  for (const ShapeRow& r : rows) {
    DC_INTERNAL_CHECK(r.kernel >= 0 && size_t(r.kernel) < shares.size(),
                      "shape dispatched to kernel {} of {}", r.kernel, shares.size());
    KernelShare& s = shares[r.kernel];
    ++s.shapes;
    s.weight += total_weight > 0 ? r.weight / total_weight : 0;
    int64_t m = r.shape.empty() ? 0 : r.shape[0];
    auto& run = runs[r.kernel];
    if (!run.empty() && run.back().second + 1 == m) {
      run.back().second = m;
    } else {
      run.push_back({m, m});
    }
  }
  for (size_t k = 0; k < shares.size(); ++k) {
    for (auto [lo, hi] : runs[k]) {
      if (!shares[k].m_values.empty()) shares[k].m_values += ", ";
      shares[k].m_values += lo == hi ? fmt::format("{}", lo) : fmt::format("{}..{}", lo, hi);
    }
  }
  return shares;
}

}  // namespace dietcode::report
