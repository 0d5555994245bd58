// Which estimator a tuning measurement should use (src/tune/README.md, "Which
// estimator"): one kernel measured again and again through the tuner's own Measurer,
// printing for each measurement the min and the median of its bursts and their
// spread, then for each estimator its mean and its coefficient of variation across the
// measurements. Run it on a quiet machine and beside a busy neighbour
// (`stress-ng --cpu 1` or `yes > /dev/null`) and compare.
//
//   bench_measure_noise [MEASUREMENTS=30] [M=16] [SECONDS_PER_BURST=0.01]
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "codegen/llvm/target.h"
#include "tune/measure.h"

using namespace dietcode;

int main(int argc, char** argv) {
  int n = argc > 1 ? std::stoi(argv[1]) : 30;
  int64_t m = argc > 2 ? std::stoll(argv[2]) : 16;
  const double burst = argc > 3 ? std::stod(argv[3]) : 0.01;
  ops::OperatorSpec op;
  op.op = "dense";
  op.n = 768;
  op.k = 768;
  op.m_min = 1;
  op.m_max = 128;
  tune::MeasureOptions o;
  o.worker_path = tune::default_worker_path();
  o.workers = 1;
  o.max_attempts = 1;  // the raw bursts, no re-measurement
  o.seconds_per_repeat = burst;
  tune::Measurer measurer(op, o);
  schedule::MicroKernelSchedule s;
  s.isa = codegen::host_target().isa;
  s.mr = 4;
  s.nr = 2 * schedule::vector_isa(s.isa).width;
  s.kc = 256;
  s.mc = 16;
  s.nc = 256;
  s.parallel = schedule::ParallelAxis::None;
  s.pack_b = schedule::PackB::Prepacked;
  std::vector<double> mins, medians, spreads;
  for (int i = 0; i < n; ++i) {
    tune::MeasureResult r = measurer.measure({{s, {m}, ""}})[0];
    if (!r.error.empty()) {
      fmt::print(stderr, "error: {}\n", r.error);
      return 1;
    }
    mins.push_back(r.timing.min_seconds * 1e6);
    medians.push_back(r.timing.median_seconds * 1e6);
    spreads.push_back(r.timing.spread);
    fmt::print("{:3d}  min {:8.2f} us  median {:8.2f} us  spread {:5.1f}%\n", i, mins.back(),
               medians.back(), 100 * spreads.back());
  }
  auto summary = [](const char* name, const std::vector<double>& v) {
    double mean = 0, var = 0;
    for (double x : v) mean += x;
    mean /= double(v.size());
    for (double x : v) var += (x - mean) * (x - mean);
    double sd = std::sqrt(var / double(v.size() - 1));
    fmt::print("{:7s} mean {:8.2f} us  cv {:5.1f}%\n", name, mean, 100 * sd / mean);
  };
  summary("min", mins);
  summary("median", medians);
  int disturbed = 0;
  for (double x : spreads) disturbed += x > o.disturbed_spread ? 1 : 0;
  std::vector<double> sorted = spreads;
  std::sort(sorted.begin(), sorted.end());
  fmt::print("spread  median {:.1f}%  p90 {:.1f}%  beyond {:.0f}%: {} of {}\n",
             100 * sorted[sorted.size() / 2], 100 * sorted[sorted.size() * 9 / 10],
             100 * o.disturbed_spread, disturbed, n);
}
