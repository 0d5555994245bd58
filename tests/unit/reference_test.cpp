// The float64 oracle (reference/reference.h) against plain loops written here, for the
// contractions whose reductions it evaluates as strided dot products: the same products
// summed in the same order, so the values are equal exactly.
#include "reference/reference.h"

#include <gtest/gtest.h>

#include <random>

#include "ops/spec.h"

namespace dietcode {
namespace {

std::vector<float> random_floats(int64_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

TEST(Reference, DenseIsTheRowTimesWeightSum) {
  const ops::OperatorSpec spec{.n = 19, .k = 37, .m_min = 1, .m_max = 64, .instances = {}};
  te::Operator op = spec.build();
  std::mt19937_64 rng(7);
  for (int64_t m : {1, 5, 64, 100}) {
    std::vector<float> x = random_floats(m * spec.k, rng), w = random_floats(spec.n * spec.k, rng);
    std::vector<double> got = reference::evaluate(op, {m}, {x.data(), w.data()});
    ASSERT_EQ(got.size(), size_t(m * spec.n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < spec.n; ++j) {
        double want = 0;
        for (int64_t k = 0; k < spec.k; ++k)
          want += double(x[i * spec.k + k]) * double(w[j * spec.k + k]);
        ASSERT_EQ(got[i * spec.n + j], want) << "M=" << m << " at (" << i << ", " << j << ")";
      }
  }
}

TEST(Reference, BatchMatmulWithTheShapeVariableOnBothSides) {
  // Attention's two products: Q K^T (NT, N = M) and S V (NN, K = M), batch 3.
  for (const char* layout : {"NT", "NN"}) {
    const bool nt = layout == std::string("NT");
    const ops::OperatorSpec spec{.op = "batch_matmul",
                                 .n = 8,
                                 .k = 8,
                                 .batch = 3,
                                 .layout = layout,
                                 .n_is_m = nt,
                                 .k_is_m = !nt,
                                 .m_min = 1,
                                 .m_max = 32,
                                 .instances = {}};
    te::Operator op = spec.build();
    std::mt19937_64 rng(11);
    for (int64_t m : {1, 7, 33}) {
      const int64_t n = spec.n_is_m ? m : spec.n, k = spec.k_is_m ? m : spec.k;
      std::vector<float> a = random_floats(spec.batch * m * k, rng);
      std::vector<float> b = random_floats(spec.batch * k * n, rng);
      std::vector<int64_t> at;  // every element, in a scattered order
      for (int64_t e = spec.batch * m * n - 1; e >= 0; e -= 3) at.push_back(e);
      std::vector<double> got = reference::evaluate_at(op, {m}, {a.data(), b.data()}, at);
      for (size_t s = 0; s < at.size(); ++s) {
        const int64_t bi = at[s] / (m * n), i = at[s] / n % m, j = at[s] % n;
        double want = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const float bv = spec.n_is_m ? b[(bi * n + j) * k + kk] : b[(bi * k + kk) * n + j];
          want += double(a[(bi * m + i) * k + kk]) * double(bv);
        }
        ASSERT_EQ(got[s], want) << layout << " M=" << m << " element " << at[s];
      }
    }
  }
}

}  // namespace
}  // namespace dietcode
