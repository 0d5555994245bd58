#include "tune/cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <thread>

#include "support/error.h"
#include "support/int_math.h"

namespace dietcode::tune {

namespace {

// Zen 4 / Skylake-class cache sizes per core; the features are ratios to these, so the
// exact numbers matter less than the ordering they induce.
constexpr double kL1Bytes = 32 * 1024.0, kL2Bytes = 1024 * 1024.0, kL3Bytes = 16 * 1024 * 1024.0;

void xgb_check(int rc, const char* what) {
  if (rc != 0) internal_error(__FILE__, __LINE__, std::string(what) + ": " + XGBGetLastError());
}

}  // namespace

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> names = {"mr",
                                                 "nr",
                                                 "vectors",
                                                 "accumulators",
                                                 "register_fraction",
                                                 "kc",
                                                 "mc",
                                                 "nc",
                                                 "log2_kc",
                                                 "log2_mc",
                                                 "log2_nc",
                                                 "unroll_k",
                                                 "k_streams",
                                                 "prefetch_b",
                                                 "prefetch_next",
                                                 "pack_a_direct",
                                                 "pack_b_prepacked",
                                                 "b_panel_tile",
                                                 "order_nkm",
                                                 "order_nmk",
                                                 "order_knm",
                                                 "order_kmn",
                                                 "order_mnk",
                                                 "order_mkn",
                                                 "parallel_none",
                                                 "parallel_batch",
                                                 "parallel_m",
                                                 "parallel_n",
                                                 "inner_m",
                                                 "loads_per_kstep",
                                                 "flops_per_kstep",
                                                 "kernel_intensity",
                                                 "l1_footprint",
                                                 "l2_b_block",
                                                 "l2_a_block",
                                                 "l3_blocks",
                                                 "m",
                                                 "n",
                                                 "k",
                                                 "batch",
                                                 "tiles_m",
                                                 "tiles_n",
                                                 "tasks",
                                                 "tasks_per_thread",
                                                 "k_blocks",
                                                 "c_traffic_per_flop",
                                                 "a_pack_per_flop",
                                                 "b_pack_per_flop",
                                                 "flops_log2",
                                                 "mc_tiles",
                                                 "nc_tiles",
                                                 "k_remainder",
                                                 "dot_products",
                                                 "batch_inner"};
  return names;
}

std::vector<float> micro_kernel_features(const schedule::MicroKernelSchedule& s, const Extents& e,
                                         int threads) {
  const schedule::VectorIsa& isa = schedule::vector_isa(s.isa);
  // Accumulator vectors per row: NR/W for outer products, NR for dot products.
  const bool dot = s.vector_axis == schedule::Axis::K;
  double vectors = dot ? double(s.nr) : double(s.nr / isa.width);
  double acc = double(s.mr) * vectors;
  using schedule::Axis;
  using schedule::ParallelAxis;
  double order[6] = {};
  static const schedule::LoopOrder orders[6] = {
      {Axis::N, Axis::K, Axis::M}, {Axis::N, Axis::M, Axis::K}, {Axis::K, Axis::N, Axis::M},
      {Axis::K, Axis::M, Axis::N}, {Axis::M, Axis::N, Axis::K}, {Axis::M, Axis::K, Axis::N}};
  for (size_t i = 0; i < 6; ++i) order[i] = s.loop_order == orders[i] ? 1 : 0;
  double tiles_m = double(ceil_div(e.m, s.mr)), tiles_n = double(ceil_div(e.n, s.nr));
  double tasks = double(parallel_tasks(s, e));
  double k_blocks = double(ceil_div(e.k, s.kc));
  double flops = std::max(e.flops(), 1.0);
  double kc_eff = double(std::min(s.kc, e.k));
  // C is read and written once per k-block per tile; A is packed once per (m, k) block
  // per n block (per_block B) and B per (n, k) block.
  double c_traffic = 8.0 * double(e.batch) * tiles_m * s.mr * tiles_n * s.nr * k_blocks;
  double n_blocks = double(ceil_div(e.n, s.nc));
  double a_pack = s.pack_a == schedule::PackA::Packed
                      ? 8.0 * double(e.batch) * double(e.m) * double(e.k) *
                            (s.loop_order[0] == Axis::N ? n_blocks : 1.0)
                      : 0.0;
  double b_pack = s.pack_b == schedule::PackB::PerBlock
                      ? 8.0 * double(e.batch) * double(e.n) * double(e.k) *
                            (s.loop_order[0] == Axis::M ? double(ceil_div(e.m, s.mc)) : 1.0)
                      : 0.0;
  std::vector<float> f = {
      float(s.mr),
      float(s.nr),
      float(vectors),
      float(acc),
      float(double(schedule::tile_registers(s.mr, vectors)) / double(isa.registers)),
      float(s.kc),
      float(s.mc),
      float(s.nc),
      float(std::log2(double(s.kc))),
      float(std::log2(double(s.mc))),
      float(std::log2(double(s.nc))),
      float(s.unroll_k),
      float(s.k_streams),
      float(s.prefetch_b),
      s.prefetch_next ? 1.f : 0.f,
      s.pack_a == schedule::PackA::Direct ? 1.f : 0.f,
      s.pack_b == schedule::PackB::Prepacked ? 1.f : 0.f,
      s.b_panel == schedule::BPanel::Tile ? 1.f : 0.f,
      float(order[0]),
      float(order[1]),
      float(order[2]),
      float(order[3]),
      float(order[4]),
      float(order[5]),
      s.parallel == ParallelAxis::None ? 1.f : 0.f,
      s.parallel == ParallelAxis::Batch ? 1.f : 0.f,
      s.parallel == ParallelAxis::M ? 1.f : 0.f,
      s.parallel == ParallelAxis::N ? 1.f : 0.f,
      s.inner_tile_loop == Axis::M ? 1.f : 0.f,
      float(double(s.mr) + vectors),
      float(2.0 * double(s.mr) * double(s.nr)),
      float(2.0 * double(s.mr) * double(s.nr) / (4.0 * (double(s.mr) + double(s.nr)))),
      float(kc_eff * double(s.mr + s.nr) * 4.0 / kL1Bytes),
      float(kc_eff * double(std::min(s.nc, e.n + s.nr)) * 4.0 / kL2Bytes),
      float(kc_eff * double(std::min(s.mc, e.m + s.mr)) * 4.0 / kL2Bytes),
      float(kc_eff * double(s.mc + s.nc) * 4.0 / kL3Bytes),
      float(e.m),
      float(e.n),
      float(e.k),
      float(e.batch),
      float(tiles_m),
      float(tiles_n),
      float(tasks),
      float(tasks / std::max(threads, 1)),
      float(k_blocks),
      float(c_traffic / flops),
      float(a_pack / flops),
      float(b_pack / flops),
      float(std::log2(flops)),
      float(double(s.mc) / double(s.mr)),
      float(double(s.nc) / double(s.nr)),
      float(double(e.k % s.kc) / double(s.kc)),
      dot ? 1.f : 0.f,
      s.batch_inner ? 1.f : 0.f,
  };
  DC_INTERNAL_CHECK(f.size() == feature_names().size(), "feature count {} != names {}", f.size(),
                    feature_names().size());
  return f;
}

ThroughputModel::ThroughputModel() = default;
ThroughputModel::~ThroughputModel() {
  if (booster_) XGBoosterFree(booster_);
}
ThroughputModel::ThroughputModel(ThroughputModel&& o) noexcept
    : booster_(o.booster_), constant_(o.constant_) {
  o.booster_ = nullptr;
}
ThroughputModel& ThroughputModel::operator=(ThroughputModel&& o) noexcept {
  std::swap(booster_, o.booster_);
  constant_ = o.constant_;
  return *this;
}

namespace {

struct DMatrix {
  DMatrixHandle h = nullptr;
  explicit DMatrix(const std::vector<std::vector<float>>& rows) {
    size_t cols = rows.empty() ? 0 : rows[0].size();
    std::vector<float> flat;
    flat.reserve(rows.size() * cols);
    for (const auto& r : rows) {
      DC_INTERNAL_CHECK(r.size() == cols, "ragged feature rows");
      flat.insert(flat.end(), r.begin(), r.end());
    }
    xgb_check(XGDMatrixCreateFromMat(flat.data(), rows.size(), cols, NAN, &h),
              "XGDMatrixCreateFromMat");
  }
  ~DMatrix() {
    if (h) XGDMatrixFree(h);
  }
};

}  // namespace

void ThroughputModel::train(const std::vector<std::vector<float>>& features,
                            const std::vector<double>& gflops) {
  DC_INTERNAL_CHECK(features.size() == gflops.size(), "features/labels mismatch");
  if (features.empty()) return;
  constant_ = std::accumulate(gflops.begin(), gflops.end(), 0.0) / double(gflops.size());
  if (booster_) {
    XGBoosterFree(booster_);
    booster_ = nullptr;
  }
  if (features.size() < kMinSamples) return;
  DMatrix train(features);
  std::vector<float> labels;
  for (double g : gflops) labels.push_back(float(std::log(std::max(g, 1e-3))));
  xgb_check(XGDMatrixSetFloatInfo(train.h, "label", labels.data(), labels.size()),
            "XGDMatrixSetFloatInfo");
  BoosterHandle b = nullptr;
  xgb_check(XGBoosterCreate(&train.h, 1, &b), "XGBoosterCreate");
  // Fitting runs between rounds, while no kernel is measured: it may use every core. The
  // exact greedy splits XGBoost picks for data this small are the same for any thread count.
  const std::string nthread = std::to_string(std::max(1u, std::thread::hardware_concurrency()));
  const std::pair<const char*, const char*> params[] = {{"objective", "reg:squarederror"},
                                                        {"max_depth", "5"},
                                                        {"eta", "0.05"},
                                                        {"min_child_weight", "1"},
                                                        {"subsample", "1.0"},
                                                        {"nthread", nthread.c_str()},
                                                        {"verbosity", "0"},
                                                        {"seed", "7"}};
  for (auto [k, v] : params) xgb_check(XGBoosterSetParam(b, k, v), "XGBoosterSetParam");
  // Small steps, many trees: on our records (hundreds of kernels) this ranks held-out
  // kernels best among the settings tried (depth 3-8, eta 0.05-0.2).
  for (int iter = 0; iter < 400; ++iter)
    xgb_check(XGBoosterUpdateOneIter(b, iter, train.h), "XGBoosterUpdateOneIter");
  booster_ = b;
}

std::vector<double> ThroughputModel::predict(
    const std::vector<std::vector<float>>& features) const {
  if (!booster_ || features.empty()) return std::vector<double>(features.size(), constant_);
  DMatrix m(features);
  bst_ulong len = 0;
  const float* out = nullptr;
  xgb_check(XGBoosterPredict(booster_, m.h, 0, 0, 0, &len, &out), "XGBoosterPredict");
  DC_INTERNAL_CHECK(len == features.size(), "XGBoost returned {} predictions for {} rows", len,
                    features.size());
  std::vector<double> result(len);
  for (bst_ulong i = 0; i < len; ++i) result[i] = std::exp(double(out[i]));
  return result;
}

double pairwise_ranking_accuracy(const std::vector<double>& predicted,
                                 const std::vector<double>& measured, double min_gap) {
  int64_t agree = 0, total = 0;
  for (size_t i = 0; i < measured.size(); ++i)
    for (size_t j = i + 1; j < measured.size(); ++j) {
      if (measured[i] == measured[j]) continue;
      double lo = std::min(measured[i], measured[j]), hi = std::max(measured[i], measured[j]);
      if (min_gap > 0 && hi <= lo * (1 + min_gap)) continue;
      ++total;
      if ((predicted[i] - predicted[j]) * (measured[i] - measured[j]) > 0) ++agree;
    }
  return total ? double(agree) / double(total) : 1.0;
}

size_t best_fit_shape(const schedule::MicroKernelSchedule& s, const ShapeExtents& shapes,
                      const OccupancyModel& occ) {
  size_t best = 0;
  double best_score = -1, best_flops = -1;
  for (size_t i = 0; i < shapes.size(); ++i) {
    double score = occ.occ(s, shapes[i]) * pad_ratio(s, shapes[i]);
    double flops = shapes[i].flops();
    if (score > best_score + 1e-12 ||
        (std::abs(score - best_score) <= 1e-12 && flops > best_flops)) {
      best = i;
      best_score = score;
      best_flops = flops;
    }
  }
  return best;
}

CostModel::CostModel(const te::Operator& op, int threads)
    : op_(op), c_(ops::match_contraction(op)), threads_(threads) {
  occ_.cores = threads;
}

Extents CostModel::extents(const std::vector<int64_t>& shape) const {
  return ShapeExtents::at(c_, op_, shape);
}

double CostModel::intrinsic_gflops(const TuningRecord& r) const {
  Extents e = extents(r.shape);
  const schedule::MicroKernelSchedule& s = micro_kernel(r);
  return r.gflops / (occ_.occ(s, e) * pad_ratio(s, e));
}

void CostModel::fit(const std::vector<const TuningRecord*>& records) {
  // occ first: samples of one kernel (by digest) at several task counts, padding divided out.
  std::map<uint64_t, int> group;
  std::vector<OccupancyModel::Sample> samples;
  for (const TuningRecord* r : records) {
    Extents e = extents(r->shape);
    const schedule::MicroKernelSchedule& s = micro_kernel(*r);
    int g = group.emplace(s.digest(), int(group.size())).first->second;
    samples.push_back({g, parallel_tasks(s, e), r->gflops / pad_ratio(s, e)});
  }
  occ_.fit(samples);
  std::vector<std::vector<float>> x;
  std::vector<double> y;
  for (const TuningRecord* r : records) {
    x.push_back(micro_kernel_features(micro_kernel(*r), extents(r->shape), threads_));
    y.push_back(intrinsic_gflops(*r));
  }
  f_.train(x, y);
}

std::vector<std::vector<double>> CostModel::predict_generic(
    const std::vector<schedule::MicroKernelSchedule>& kernels, const ShapeExtents& shapes) const {
  std::vector<std::vector<float>> features;
  features.reserve(kernels.size());
  for (const auto& s : kernels)
    features.push_back(micro_kernel_features(s, shapes[best_fit(s, shapes)], threads_));
  std::vector<double> f = f_.predict(features);
  std::vector<std::vector<double>> out(kernels.size(), std::vector<double>(shapes.size()));
  for (size_t k = 0; k < kernels.size(); ++k)
    for (size_t i = 0; i < shapes.size(); ++i)
      out[k][i] = f[k] * occ_.occ(kernels[k], shapes[i]) * pad_ratio(kernels[k], shapes[i]);
  return out;
}

std::vector<std::vector<double>> CostModel::predict_at_shapes(
    const std::vector<schedule::MicroKernelSchedule>& kernels,
    const std::vector<std::vector<int64_t>>& shapes) const {
  std::vector<Extents> ext;
  for (const auto& s : shapes) ext.push_back(extents(s));
  std::vector<std::vector<float>> x;
  for (const auto& k : kernels)
    for (const auto& e : ext) x.push_back(micro_kernel_features(k, e, threads_));
  std::vector<double> f = f_.predict(x);
  std::vector<std::vector<double>> out(kernels.size(), std::vector<double>(shapes.size()));
  for (size_t k = 0; k < kernels.size(); ++k)
    for (size_t s = 0; s < shapes.size(); ++s)
      out[k][s] =
          f[k * shapes.size() + s] * occ_.occ(kernels[k], ext[s]) * pad_ratio(kernels[k], ext[s]);
  return out;
}

std::vector<double> CostModel::predict_records(
    const std::vector<const TuningRecord*>& records) const {
  std::vector<std::vector<float>> x;
  std::vector<Extents> ext;
  for (const TuningRecord* r : records) {
    ext.push_back(extents(r->shape));
    x.push_back(micro_kernel_features(micro_kernel(*r), ext.back(), threads_));
  }
  std::vector<double> out = f_.predict(x);
  for (size_t i = 0; i < records.size(); ++i)
    out[i] *=
        occ_.occ(micro_kernel(*records[i]), ext[i]) * pad_ratio(micro_kernel(*records[i]), ext[i]);
  return out;
}

}  // namespace dietcode::tune
