// A plausible tuning run to draw a report from, shared by the report tests and the
// sample-report writer that the browser test opens:
//   - "qkv <proj> & 'x'": the BERT QKV dense layer (N=2304, K=768, M=1..128) with the 600
//     real records of tests/data (a random search), a hand-made module of their three
//     fastest kernels (M <= 16, <= 64, the rest), and a synthetic benchmark against two
//     peers with a roofline;
//   - "small": a small dense operator with weighted instances, a few synthetic records
//     (some failed), not benchmarked;
//   - "untuned": a module with no records at all.
// The odd name checks that the page escapes text and that file names stay plain.
#pragma once

#include <algorithm>
#include <map>

#include "report/tuning_report.h"
#include "tune/records.h"

namespace dietcode::report::testing {

inline schedule::MicroKernelSchedule sample_schedule(schedule::Isa isa, int64_t mr, int64_t nr,
                                                     int64_t kc) {
  schedule::MicroKernelSchedule s;
  s.isa = isa;
  s.mr = mr;
  s.nr = nr;
  s.kc = kc;
  s.mc = mr * 8;
  s.nc = nr * 4;
  return s;
}

// The `count` fastest distinct schedules of the records, slowest of them first.
inline std::vector<schedule::AnySchedule> fastest_schedules(
    const std::vector<tune::TuningRecord>& records, size_t count) {
  std::vector<const tune::TuningRecord*> ok;
  for (const tune::TuningRecord& r : records)
    if (r.ok()) ok.push_back(&r);
  std::sort(ok.begin(), ok.end(),
            [](const auto* a, const auto* b) { return a->gflops > b->gflops; });
  std::vector<schedule::AnySchedule> out;
  for (const tune::TuningRecord* r : ok)
    if (out.size() < count && std::find(out.begin(), out.end(), r->schedule) == out.end())
      out.push_back(r->schedule);
  std::reverse(out.begin(), out.end());
  return out;
}

inline runtime::ModuleSpec module_with_bands(const ops::OperatorSpec& op, schedule::Isa isa,
                                             std::vector<schedule::AnySchedule> kernels,
                                             const std::vector<int64_t>& band_ends) {
  runtime::ModuleSpec m;
  m.op = op;
  m.isa = isa;
  m.kernels = std::move(kernels);
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int> labels;
  for (const auto& s : op.declared_shapes()) {
    shapes.push_back(s);
    int k = 0;
    while (k + 1 < int(band_ends.size()) && s[0] > band_ends[k]) ++k;
    labels.push_back(k);
  }
  m.dispatch = dispatch::DecisionTree::fit(shapes, labels);
  m.machine = {{"cpu_model", "AMD EPYC (sample)"}, {"cores", 2}, {"isa", isa}};
  return m;
}

inline TuningReportInput sample_input(const std::string& records_path,
                                      bench::BenchResult& bench_storage) {
  TuningReportInput in;
  in.workload = "sample <workload>";

  OperatorResult qkv;
  qkv.name = "qkv <proj> & 'x'";
  qkv.module.op.op = "dense";
  qkv.module.op.n = 2304;
  qkv.module.op.k = 768;
  qkv.module.op.m_min = 1;
  qkv.module.op.m_max = 128;
  qkv.records = tune::read_records_any_machine(records_path);
  // The random-search records are all at large M (each kernel's best-fitting shape), so
  // most declared shapes have no measurement: the page must say so.
  qkv.module =
      module_with_bands(qkv.module.op, schedule::Isa::Avx512, fastest_schedules(qkv.records, 3), {16, 64, 128});
  qkv.module.provenance = {{"tool", "dietcode 0.1.0"},
                           {"mode", "joint"},
                           {"records", records_path},
                           {"trials", qkv.records.size()},
                           {"note", "<script>alert('not escaped')</script>"}};
  qkv.threads = 1;
  in.operators.push_back(qkv);

  // A synthetic benchmark of the first operator: a module and two peers that grow with M
  // toward a plateau, under a roofline.
  bench::BenchResult& b = bench_storage;
  b.roofline.threads = 1;
  b.roofline.peak_gflops = 180;
  b.roofline.levels = {{"L1", 32 << 10, 400}, {"L2", 1 << 20, 200}, {"DRAM", int64_t{1} << 62, 30}};
  b.notes = {"peer not available: blis (sample)"};
  b.compile_seconds = {0.012, 0.015, 0.02};
  for (int64_t m = 1; m <= 128; ++m) {
    double x = double(m);
    std::map<std::string, double> gflops = {{"dietcode", 150 * x / (x + 6)},
                                            {"openblas", 140 * x / (x + 10)},
                                            {"onednn", 145 * x / (x + 8)}};
    for (const auto& [impl, g] : gflops) {
      bench::Measurement r;
      r.workload = qkv.name;
      r.impl = impl;
      r.t = r.m = m;
      r.n = 2304;
      r.k = 768;
      r.gflops = g;
      r.seconds = 2.0 * x * 2304 * 768 / (g * 1e9);
      r.roofline_gflops = std::min(180.0, 40.0 * x);  // bandwidth-bound at small M
      r.level = "L2";
      b.rows.push_back(r);
    }
  }
  in.bench = &b;

  OperatorResult small;
  small.name = "small";
  small.module.op.op = "dense";
  small.module.op.n = 96;
  small.module.op.k = 64;
  small.module.op.m_min = 1;
  small.module.op.m_max = 40;
  small.module.op.instances = {{1, 4}, {8, 2}, {16, 1}, {33, 0.5}};
  std::vector<schedule::MicroKernelSchedule> kernels;
  for (int64_t mr = 1; mr <= 6; ++mr)
    for (int64_t nr : {8, 16, 24}) kernels.push_back(sample_schedule(schedule::Isa::Avx2, mr, nr, 64));
  for (size_t i = 0; i < 60; ++i) {
    tune::TuningRecord r;
    r.schedule = kernels[(i * 7) % kernels.size()];
    r.shape = {small.module.op.instances[i % 4].value};
    r.origin = i % 4 == 3 ? tune::Origin::Probe : tune::Origin::Joint;
    double m = double(r.shape[0]);
    r.gflops = 40 * m / (m + 4) * (0.6 + 0.08 * double(tune::micro_kernel(r).mr)) + double(i % 5);
    r.seconds = 2 * m * 96 * 64 / (r.gflops * 1e9);
    if (i % 13 == 5) {
      r.error = "wrong result: max relative error 0.3";
      r.gflops = r.seconds = 0;
    }
    small.records.push_back(r);
  }
  small.module = module_with_bands(small.module.op, schedule::Isa::Avx2, {kernels[3], kernels[14]}, {8, 40});
  small.module.provenance = {{"mode", "joint"}, {"trials", 60}};
  small.threads = 2;
  in.operators.push_back(small);

  OperatorResult untuned;
  untuned.name = "untuned";
  untuned.module.op.m_min = 1;
  untuned.module.op.m_max = 8;
  untuned.module = module_with_bands(untuned.module.op, schedule::Isa::Avx2, {kernels[0]}, {8});
  in.operators.push_back(untuned);
  return in;
}

}  // namespace dietcode::report::testing
