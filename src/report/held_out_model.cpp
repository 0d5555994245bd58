// A copy of the tuner's cost model fit (tune/tuner.cpp, CostModel::fit and
// evaluate_cost_model), kept to the public tune headers; a test checks that its ranking
// accuracy equals tune::evaluate_cost_model's on the same records.
#include "report/held_out_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

#include "ops/contraction.h"
#include "tune/analysis.h"
#include "tune/cost_model.h"

namespace dietcode::report {

namespace {

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace

HeldOutModel held_out_model(const ops::OperatorSpec& spec, int threads,
                            const std::vector<tune::TuningRecord>& records) {
  te::Operator op = spec.build();
  ops::Contraction c = ops::match_contraction(op);
  auto extents = [&](const tune::TuningRecord& r) {
    return tune::ShapeExtents::at(c, op, r.shape);
  };
  std::vector<const tune::TuningRecord*> train, test;
  for (const tune::TuningRecord& r : records)
    if (r.ok() && r.gflops > 0)
      (fnv1a(schedule::to_json_text(r.schedule)) % 5 == 0 ? test : train).push_back(&r);
  // occ's exponent from kernels measured at several task counts, then f_MK on the
  // intrinsic labels gflops / (occ * pad).
  tune::OccupancyModel occ;
  occ.cores = threads;
  std::map<std::string, int> group;
  std::vector<tune::OccupancyModel::Sample> samples;
  for (const tune::TuningRecord* r : train) {
    tune::Extents e = extents(*r);
    int g = group.emplace(schedule::to_json_text(r->schedule), int(group.size())).first->second;
    samples.push_back(
        {g, tune::parallel_tasks(r->schedule, e), r->gflops / tune::pad_ratio(r->schedule, e)});
  }
  occ.fit(samples);
  std::vector<std::vector<float>> x;
  std::vector<double> y;
  for (const tune::TuningRecord* r : train) {
    tune::Extents e = extents(*r);
    x.push_back(tune::micro_kernel_features(r->schedule, e, threads));
    y.push_back(r->gflops / (occ.occ(r->schedule, e) * tune::pad_ratio(r->schedule, e)));
  }
  tune::ThroughputModel f;
  f.train(x, y);

  HeldOutModel out;
  out.train = train.size();
  out.learned = f.trained();
  std::vector<std::vector<float>> test_x;
  for (const tune::TuningRecord* r : test)
    test_x.push_back(tune::micro_kernel_features(r->schedule, extents(*r), threads));
  std::vector<double> f_mk = f.predict(test_x);
  std::vector<double> predicted, measured, relative_error;
  for (size_t i = 0; i < test.size(); ++i) {
    const tune::TuningRecord& r = *test[i];
    tune::Extents e = extents(r);
    double p = f_mk[i] * occ.occ(r.schedule, e) * tune::pad_ratio(r.schedule, e);
    out.test.push_back({p, r.gflops, r.origin});
    predicted.push_back(p);
    measured.push_back(r.gflops);
    relative_error.push_back(std::abs(p - r.gflops) / r.gflops);
  }
  out.ranking_accuracy = tune::pairwise_ranking_accuracy(predicted, measured);
  if (!relative_error.empty()) {
    std::sort(relative_error.begin(), relative_error.end());
    out.median_relative_error = relative_error[relative_error.size() / 2];
  }
  return out;
}

}  // namespace dietcode::report
