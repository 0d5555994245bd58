// First numbers: single-threaded GFLOP/s of one hand-picked micro-kernel on the BERT
// dense layer N=2304, K=768 for several M, beside OpenBLAS's cblas_sgemm measured in
// the same run (interleaved), and the median JIT compile time per kernel.
// Every result is checked against a float64 loop before it is timed.
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "codegen/llvm/target.h"
#include "ops/dense.h"
#include "reference/reference.h"
#include "runtime/kernel.h"
#include "runtime/thread_pool.h"
#include "schedule/random_schedule.h"

extern "C" void openblas_set_num_threads(int);

using namespace dietcode;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int64_t kN = 2304, kK = 768;

schedule::MicroKernelSchedule hand_picked(schedule::Isa isa) {
  schedule::MicroKernelSchedule s;
  s.isa = isa;
  s.mr = 6;
  s.nr = isa == schedule::Isa::Avx512 ? 64 : 16;
  s.kc = 256;
  s.mc = 96;
  s.nc = isa == schedule::Isa::Avx512 ? 768 : 256;
  s.loop_order = {schedule::Axis::N, schedule::Axis::K, schedule::Axis::M};
  s.parallel = schedule::ParallelAxis::None;
  s.unroll_k = 4;
  s.pack_a = schedule::PackA::Packed;
  s.pack_b = schedule::PackB::Prepacked;
  return s;
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

int main() {
  runtime::ThreadPool::global().set_num_threads(1);
  openblas_set_num_threads(1);
  const schedule::Isa isa = codegen::host_target().isa;
  te::Operator op = ops::dense(1, 512, kN, kK);
  schedule::MicroKernelSchedule s = hand_picked(isa);
  runtime::Kernel kernel = runtime::Kernel::compile(op, s);

  // JIT compile time: the hand-picked kernel and 15 random ones.
  std::vector<double> compile_times{kernel.compile_seconds()};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 15; ++i)
    compile_times.push_back(
        runtime::Kernel::compile(op, schedule::random_schedule(rng, isa, op)).compile_seconds());
  std::sort(compile_times.begin(), compile_times.end());

  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> w(kN * kK);
  for (float& v : w) v = dist(rng);
  runtime::AlignedBuffer packed = kernel.prepack({1}, {w.data(), static_cast<int64_t>(w.size())});

  fmt::print("dense N={} K={}, 1 thread, host {} ({}), schedule {}\n", kN, kK,
             codegen::host_target().cpu, to_string(isa), schedule::to_json_text(s));
  fmt::print("{:>6} {:>14} {:>14} {:>8} {:>12}\n", "M", "dietcode GF/s", "OpenBLAS GF/s", "ratio",
             "rel err");
  for (int64_t m : {1, 16, 64, 128, 512}) {
    std::vector<float> x(m * kK), y(m * kN), y_blas(m * kN);
    for (float& v : x) v = dist(rng);
    std::vector<double> want(m * kN, 0.0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < kN; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < kK; ++k) acc += double(x[i * kK + k]) * w[j * kK + k];
        want[i * kN + j] = acc;
      }
    auto run_ours = [&] {
      kernel.run({m}, {{x.data(), m * kK}, {packed.data(), packed.size()}}, {y.data(), m * kN});
    };
    auto run_blas = [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, kN, kK, 1.0f, x.data(), kK, w.data(),
                  kK, 0.0f, y_blas.data(), kN);
    };
    std::fill(y.begin(), y.end(), NAN);
    run_ours();
    run_blas();
    double err = reference::relative_error(y.data(), want);
    double err_blas = reference::relative_error(y_blas.data(), want);
    if (!(err < 1e-5) || !(err_blas < 1e-5)) {
      fmt::print("M={}: wrong result (dietcode {:.3g}, OpenBLAS {:.3g})\n", m, err, err_blas);
      return 1;
    }
    // Interleaved repetitions, so that machine drift hits both alike.
    double flops = 2.0 * m * kN * kK;
    int reps = std::clamp<int>(static_cast<int>(2e9 / flops), 5, 400);
    std::vector<double> ours, blas;
    for (int r = 0; r < reps + 2; ++r) {
      auto t = Clock::now();
      run_ours();
      double a = seconds_since(t);
      t = Clock::now();
      run_blas();
      double b = seconds_since(t);
      if (r >= 2) ours.push_back(a), blas.push_back(b);  // two warm-up rounds
    }
    std::nth_element(ours.begin(), ours.begin() + ours.size() / 2, ours.end());
    std::nth_element(blas.begin(), blas.begin() + blas.size() / 2, blas.end());
    double g_ours = flops / ours[ours.size() / 2] * 1e-9,
           g_blas = flops / blas[blas.size() / 2] * 1e-9;
    fmt::print("{:>6} {:>14.1f} {:>14.1f} {:>8.2f} {:>12.2g}\n", m, g_ours, g_blas, g_ours / g_blas,
               err);
  }
  fmt::print(
      "JIT compile time per kernel: median {:.1f} ms over {} kernels (min {:.1f}, max {:.1f})\n",
      compile_times[compile_times.size() / 2] * 1e3, compile_times.size(),
      compile_times.front() * 1e3, compile_times.back() * 1e3);
  return 0;
}
