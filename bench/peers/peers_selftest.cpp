// Checks every variant of every peer plugin against a float64 loop: fresh random inputs, C
// poisoned with NaN before each run, each variant run twice. Not a CTest test: it needs the
// vendor libraries, which the main build treats as optional.
//
//   peers_selftest [PEERS_DIR [NAME...]]    (default: this build's peers folder, all peers)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "benchmark/load_peers.h"

using dietcode::bench::GemmProblem;
using dietcode::bench::Peer;

namespace {

constexpr double kTolerance = 1e-5;

std::string describe(const GemmProblem& p) {
  return "batch=" + std::to_string(p.batch) + " m=" + std::to_string(p.m) +
         " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k) +
         (p.b_layout_nk ? " B[n,k]" : " B[k,n]") + (p.b_shared ? " shared" : "");
}

std::vector<double> reference(const GemmProblem& p, const std::vector<float>& a,
                              const std::vector<float>& b) {
  std::vector<double> c(p.batch * p.m * p.n);
  for (int64_t i = 0; i < p.batch; ++i) {
    const float* bi = b.data() + (p.b_shared ? 0 : i * p.n * p.k);
    for (int64_t r = 0; r < p.m; ++r)
      for (int64_t j = 0; j < p.n; ++j) {
        double sum = 0;
        for (int64_t l = 0; l < p.k; ++l)
          sum += double(a[(i * p.m + r) * p.k + l]) * bi[p.b_layout_nk ? j * p.k + l : l * p.n + j];
        c[(i * p.m + r) * p.n + j] = sum;
      }
  }
  return c;
}

// Relative Frobenius error; NaN (an unwritten element) compares false with everything.
double error(const std::vector<float>& c, const std::vector<double>& ref) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    diff += (c[i] - ref[i]) * (c[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  return std::sqrt(diff / norm);
}

std::vector<GemmProblem> problems() {
  std::vector<GemmProblem> list;
  for (bool nk : {true, false}) {
    for (int64_t m : {1, 17, 128}) list.push_back({1, m, 96, 80, nk, true});
    for (int64_t m : {1, 17}) list.push_back({3, m, 96, 80, nk, false});
    list.push_back({3, 5, 96, 80, nk, true});
    list.push_back({1, 33, 100, 80, nk, true});  // N not a whole number of vectors
    list.push_back({1, 9, 100, 80, nk, false});  // one B that changes per call
  }
  return list;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : DIETCODE_PEERS_DIR;
  const std::vector<std::string> names(argv + std::min(argc, 2), argv + argc);
  int passed = 0, failed = 0;
  dietcode::bench::LoadedPeers loaded;
  try {
    loaded = dietcode::bench::load_peers(dir, names);
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
  for (const std::string& why : loaded.missing) {
    std::printf("FAIL missing %s\n", why.c_str());
    ++failed;
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (const auto& peer : loaded.peers) {
    std::printf("# %s: %s\n", peer->name().c_str(), peer->version().c_str());
    for (int threads : {1, 2}) {
      peer->set_threads(threads);
      for (const GemmProblem& p : problems()) {
        const std::string where = "threads=" + std::to_string(threads) + " " + describe(p);
        if (std::string why = peer->unsupported(p); !why.empty()) {
          // Every peer is expected to compute these small problems.
          std::printf("FAIL %-8s %s: unsupported: %s\n", peer->name().c_str(), where.c_str(),
                      why.c_str());
          ++failed;
          continue;
        }
        std::vector<float> a(p.batch * p.m * p.k), b((p.b_shared ? 1 : p.batch) * p.n * p.k),
            c(p.batch * p.m * p.n);
        for (float& x : a) x = dist(rng);
        for (float& x : b) x = dist(rng);
        const std::vector<double> ref = reference(p, a, b);
        try {
          for (const auto& variant : peer->prepare(p, a.data(), b.data(), c.data())) {
            double worst = 0;
            for (int repeat = 0; repeat < 2 && worst < kTolerance; ++repeat) {
              c.assign(c.size(), std::numeric_limits<float>::quiet_NaN());
              variant.run();
              const double err = error(c, ref);
              if (!(err <= worst)) worst = err;  // NaN sticks
            }
            const bool ok = worst < kTolerance;
            ok ? ++passed : ++failed;
            std::printf("%s %-8s %-26s %s err=%.1e setup=%.1fms\n", ok ? "ok  " : "FAIL",
                        peer->name().c_str(), variant.label.c_str(), where.c_str(), worst,
                        variant.setup_seconds * 1e3);
          }
        } catch (const std::exception& e) {
          std::printf("FAIL %-8s %s: %s\n", peer->name().c_str(), where.c_str(), e.what());
          ++failed;
        }
      }
    }
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
