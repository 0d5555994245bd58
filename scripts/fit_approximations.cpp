// Derives the coefficients of the approximations in codegen/llvm/activation.cpp.
//
// exp (mode "exp"): exp(r) ~ 1 + c1 r + ... + cD r^D on |r| <= ln(2)/2, near-minimax in
// relative error (least squares with Lawson's reweighting), then rounded to float.
//
//   g++ -O2 -std=c++20 scripts/fit_approximations.cpp -o /tmp/fit && /tmp/fit exp 5
//
// GELU's erfc:
//   erfc(a) ~ P(a) / Q(a) on [0, c], Q(0) = 1            (mode "erfc", the one used), or
//   erf(a) ~ a P(a^2) / Q(a^2) on [0, c]                  (the odd form, for comparison:
//                                                          float rounding near erf = 1
//                                                          costs it ~3x the error),
// near-minimax in absolute error: linearized least squares (the error times Q, divided by
// the previous Q: Sanathanan-Koerner) with Lawson's reweighting toward the largest errors,
// in long double. Prints the coefficients rounded to float, and GELU evaluated in float
// with them as the generated code does (Horner with FMA), by the measures of
// tests/codegen/gelu_test.cpp.
//
//   /tmp/fit 5 9 4 erfc
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using Real = long double;

// Least squares min |A x - y| by modified Gram-Schmidt (A: rows x cols, column-major).
std::vector<Real> least_squares(std::vector<std::vector<Real>> a, std::vector<Real> y) {
  const size_t cols = a.size(), rows = y.size();
  std::vector<std::vector<Real>> r(cols, std::vector<Real>(cols, 0));
  for (size_t j = 0; j < cols; ++j) {
    for (size_t i = 0; i < j; ++i) {
      Real dot = 0;
      for (size_t k = 0; k < rows; ++k) dot += a[i][k] * a[j][k];
      r[i][j] = dot;
      for (size_t k = 0; k < rows; ++k) a[j][k] -= dot * a[i][k];
    }
    Real norm = 0;
    for (size_t k = 0; k < rows; ++k) norm += a[j][k] * a[j][k];
    r[j][j] = std::sqrt(norm);
    for (size_t k = 0; k < rows; ++k) a[j][k] /= r[j][j];
  }
  std::vector<Real> qty(cols, 0), x(cols, 0);
  for (size_t j = 0; j < cols; ++j)
    for (size_t k = 0; k < rows; ++k) qty[j] += a[j][k] * y[k];
  for (size_t j = cols; j-- > 0;) {
    Real s = qty[j];
    for (size_t i = j + 1; i < cols; ++i) s -= r[j][i] * x[i];
    x[j] = s / r[j][j];
  }
  return x;
}

Real horner(const std::vector<Real>& c, Real x) {
  Real v = 0;
  for (size_t k = c.size(); k-- > 0;) v = v * x + c[k];
  return v;
}

// exp(r) ~ 1 + sum c_k r^k, k = 1..degree, on |r| <= ln(2) / 2.
int fit_exp(int degree) {
  const Real half = std::log(2.0L) / 2;
  const int n = 4000;
  std::vector<Real> rs, weight(n, 1), c;
  for (int i = 0; i < n; ++i) rs.push_back(-half * std::cos(M_PIl * (i + 0.5L) / n));
  Real worst = 0;
  for (int iter = 0; iter < 400; ++iter) {
    // Residual (1 + sum c_k r^k - exp(r)) / exp(r), weighted.
    std::vector<std::vector<Real>> cols(degree, std::vector<Real>(n));
    std::vector<Real> y(n);
    for (int i = 0; i < n; ++i) {
      Real scale = std::sqrt(weight[i]) / std::exp(rs[i]);
      for (int k = 1; k <= degree; ++k) cols[k - 1][i] = scale * std::pow(rs[i], k);
      y[i] = scale * (std::exp(rs[i]) - 1);
    }
    c = least_squares(cols, y);
    c.insert(c.begin(), 1);
    worst = 0;
    Real total = 0;
    for (int i = 0; i < n; ++i) {
      Real err = std::fabs(horner(c, rs[i]) / std::exp(rs[i]) - 1);
      worst = std::max(worst, err);
      weight[i] *= err;
      total += weight[i];
    }
    for (Real& w : weight) w = w / total * n;
  }
  std::printf("exp(r), degree %d on |r| <= ln(2)/2: max rel error %.3Lg\n", degree, worst);
  std::vector<float> cf;
  for (Real v : c) cf.push_back(float(v));
  for (int k = 0; k <= degree; ++k) std::printf("c%d = %.9e\n", k, double(cf[k]));
  double worst_f = 0;
  for (int i = -100000; i <= 100000; ++i) {
    float r = float(half * i / 100000), v = cf[degree];
    for (int k = degree; k-- > 0;) v = std::fma(v, r, cf[k]);
    worst_f = std::max(worst_f, std::fabs(double(v) / std::exp(double(r)) - 1));
  }
  std::printf("in float (Horner with FMA): max rel error %.3g\n", worst_f);
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "exp") return fit_exp(argc > 2 ? std::atoi(argv[2]) : 5);
  const int np = argc > 1 ? std::atoi(argv[1]) : 6;  // degree of P in a^2
  const int nq = argc > 2 ? std::atoi(argv[2]) : 4;  // degree of Q in a^2
  const Real c = argc > 3 ? std::strtold(argv[3], nullptr) : 4.0L;
  const bool erfc_mode = argc > 4;  // erfc(a) ~ P(a) / Q(a) instead
  // Points in s = a^2 / c^2 on [0, 1], denser at both ends (Chebyshev in a).
  const int n = 4000;
  std::vector<Real> as, ss, fs;
  for (int i = 0; i < n; ++i) {
    Real a = c * (1 - std::cos(M_PIl * (i + 0.5L) / n)) / 2;
    as.push_back(a);
    ss.push_back(erfc_mode ? a / c : a * a / (c * c));
    fs.push_back(erfc_mode ? std::erfc(a) : std::erf(a));
  }
  std::vector<Real> weight(n, 1), q_prev(n, 1), p, q;
  Real worst = 0;
  for (int iter = 0; iter < 400; ++iter) {
    // Unknowns: p_0..p_np, q_1..q_nq. Residual a P(s) - f Q(s), scaled by weight / Q_prev.
    std::vector<std::vector<Real>> cols(np + 1 + nq, std::vector<Real>(n));
    std::vector<Real> y(n);
    for (int i = 0; i < n; ++i) {
      Real scale = std::sqrt(weight[i]) / q_prev[i];
      const Real lead = erfc_mode ? 1 : as[i];
      for (int k = 0; k <= np; ++k) cols[k][i] = scale * lead * std::pow(ss[i], k);
      for (int k = 1; k <= nq; ++k) cols[np + k][i] = -scale * fs[i] * std::pow(ss[i], k);
      y[i] = scale * fs[i];
    }
    std::vector<Real> x = least_squares(cols, y);
    p.assign(x.begin(), x.begin() + np + 1);
    q.assign(1, 1);
    q.insert(q.end(), x.begin() + np + 1, x.end());
    worst = 0;
    Real total = 0;
    for (int i = 0; i < n; ++i) {
      q_prev[i] = horner(q, ss[i]);
      Real err = std::fabs((erfc_mode ? 1 : as[i]) * horner(p, ss[i]) / q_prev[i] - fs[i]);
      worst = std::max(worst, err);
      weight[i] *= iter < 20 ? 1 : err;  // Sanathanan-Koerner first, then Lawson
      total += weight[i];
    }
    for (Real& w : weight) w = w / total * n;
  }
  std::printf("P degree %d, Q degree %d in %s on [0, %Lg]: max abs error %.3Lg\n", np, nq,
              erfc_mode ? "a" : "a^2", c, worst);
  // Back from s = a / c (a^2 / c^2) to a (a^2).
  std::vector<float> pf, qf;
  const Real unit = erfc_mode ? c : c * c;
  for (int k = 0; k <= np; ++k) pf.push_back(float(p[k] / std::pow(unit, k)));
  for (int k = 0; k <= nq; ++k) qf.push_back(float(q[k] / std::pow(unit, k)));
  for (int k = 0; k <= np; ++k) std::printf("p%d = %.9e\n", k, double(pf[k]));
  for (int k = 0; k <= nq; ++k) std::printf("q%d = %.9e\n", k, double(qf[k]));
  // GELU as generated, and the measures of tests/codegen/gelu_test.cpp.
  auto gelu = [&](float x) {
    float z = x * 0.70710678f, a = std::fabs(z);
    float w = erfc_mode ? a : a * a, pv = pf[np], qv = qf[nq];
    for (int k = np; k-- > 0;) pv = std::fma(pv, w, pf[k]);
    for (int k = nq; k-- > 0;) qv = std::fma(qv, w, qf[k]);
    float one_plus_erf;
    if (erfc_mode) {
      float e = std::fabs(z) < float(c) ? pv / qv : 0.0f;
      one_plus_erf = z < 0 ? e : 2.0f - e;
    } else {
      float r = a < float(c) ? std::fmin(a * pv / qv, 1.0f) : 1.0f;
      one_plus_erf = z < 0 ? 1.0f - r : 1.0f + r;
    }
    return (x * 0.5f) * one_plus_erf;
  };
  double max_abs = 0, rel_pos = 0, rel_1e3 = 0;
  for (int i = -10 * 4096; i <= 10 * 4096; ++i) {
    float x = float(i) / 4096;
    double want = 0.5 * x * std::erfc(-double(x) / std::sqrt(2.0));
    double got = gelu(x), err = std::fabs(got - want),
           rel = want != 0 ? err / std::fabs(want) : err;
    max_abs = std::max(max_abs, err);
    if (x > 0) rel_pos = std::max(rel_pos, rel);
    if (std::fabs(want) >= 1e-3) rel_1e3 = std::max(rel_1e3, rel);
  }
  std::printf("gelu: max abs %.3g, max rel %.3g for x > 0, %.3g where |gelu| >= 1e-3\n", max_abs,
              rel_pos, rel_1e3);
}
