// A tuned dense layer serving a stream of requests of random sequence length, through
// the public API only, each result checked against OpenBLAS.
//
//   dietcode tune --op dense --N 768 --K 768 --M 1..128 --trials 300 --out dense.module.json
//   ./build/examples/dense_stream dense.module.json [requests]
//
// Sequence lengths are drawn from 1..2x the tuned range: shapes the module was not tuned
// for are served too (by the kernel its dispatcher predicts best).
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "dietcode/dietcode.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODULE [requests]\n", argv[0]);
    return 2;
  }
  int requests = argc > 2 ? std::atoi(argv[2]) : 200;
  try {
    dietcode::Module module = dietcode::Module::load(argv[1]);
    std::printf("%s\n", module.describe().c_str());
    if (module.input_names().size() != 2 || module.weights_input() != 1) {
      std::fprintf(stderr, "this example expects a dense layer without bias: Y = X W^T\n");
      return 2;
    }
    // Weights: sizes do not depend on M.
    std::vector<int64_t> sizes = module.buffer_sizes({1});
    const int64_t k = sizes[0], n = sizes[2], weights = sizes[1];
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> w(weights);
    for (float& v : w) v = dist(rng);
    std::unique_ptr<dietcode::PackedWeights> packed = module.prepack(w.data(), weights);

    std::uniform_int_distribution<int64_t> length(1, 256);
    double worst = 0, ours = 0, blas = 0, flops = 0;
    for (int r = 0; r < requests; ++r) {
      int64_t m = length(rng);
      std::vector<float> x(m * k), y(m * n, NAN), want(m * n);
      for (float& v : x) v = dist(rng);
      auto t0 = std::chrono::steady_clock::now();
      module.run({m}, {{x.data(), int64_t(x.size())}, {w.data(), weights}},
                 {y.data(), int64_t(y.size())}, packed.get());
      auto t1 = std::chrono::steady_clock::now();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(m), int(n), int(k), 1.0f, x.data(),
                  int(k), w.data(), int(k), 0.0f, want.data(), int(n));
      auto t2 = std::chrono::steady_clock::now();
      double num = 0, den = 0;
      for (int64_t i = 0; i < m * n; ++i) {
        if (!std::isfinite(y[i])) num = INFINITY;
        num += double(y[i] - want[i]) * double(y[i] - want[i]);
        den += double(want[i]) * double(want[i]);
      }
      worst = std::max(worst, std::sqrt(num / std::max(den, 1e-30)));
      ours += std::chrono::duration<double>(t1 - t0).count();
      blas += std::chrono::duration<double>(t2 - t1).count();
      flops += 2.0 * double(m) * double(n) * double(k);
    }
    std::printf("%d requests, M in 1..256: largest relative error vs OpenBLAS %.2e\n", requests,
                worst);
    std::printf("total time: dietcode %.1f ms (%.1f GFLOP/s), OpenBLAS %.1f ms (%.1f GFLOP/s); "
                "single calls, cold caches, not a benchmark\n",
                1e3 * ours, flops / ours * 1e-9, 1e3 * blas, flops / blas * 1e-9);
    if (!(worst < 1e-4)) {
      std::fprintf(stderr, "FAIL: results differ from OpenBLAS\n");
      return 1;
    }
  } catch (const dietcode::Error& e) {
    std::fprintf(stderr, "dietcode: %s\n", e.what());
    return 1;
  }
  return 0;
}
