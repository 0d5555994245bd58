#include "model/bert_reference.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace dietcode::model {

namespace {

using Matrix = std::vector<double>;  // row-major

// y[t, n] = x[t, k] W[n, k]^T + b[n]
Matrix linear(const Matrix& x, int64_t t, int64_t k, const float* w, const float* b, int64_t n) {
  Matrix y(t * n);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = b[j];
      const double* xr = &x[i * k];
      const float* wr = w + j * k;
      for (int64_t e = 0; e < k; ++e) s += xr[e] * double(wr[e]);
      y[i * n + j] = s;
    }
  return y;
}

void layer_norm(Matrix& x, int64_t t, int64_t n, const float* gamma, const float* beta,
                double eps) {
  for (int64_t i = 0; i < t; ++i) {
    double* r = &x[i * n];
    double mean = 0, var = 0;
    for (int64_t j = 0; j < n; ++j) mean += r[j];
    mean /= double(n);
    for (int64_t j = 0; j < n; ++j) var += (r[j] - mean) * (r[j] - mean);
    var /= double(n);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < n; ++j) r[j] = (r[j] - mean) * inv * double(gamma[j]) + double(beta[j]);
  }
}

}  // namespace

std::vector<double> bert_reference(const Safetensors& w, const BertConfig& c, const float* input,
                                   int64_t t) {
  c.check();
  const int64_t h = c.hidden, heads = c.heads, d = h / heads, f = c.ffn;
  Matrix x(input, input + t * h);
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    auto weight = [&](const std::string& name, std::vector<int64_t> shape) {
      return w.tensor(p + name, shape);
    };
    Matrix q = linear(x, t, h, weight("attention.self.query.weight", {h, h}),
                      weight("attention.self.query.bias", {h}), h);
    Matrix k = linear(x, t, h, weight("attention.self.key.weight", {h, h}),
                      weight("attention.self.key.bias", {h}), h);
    Matrix v = linear(x, t, h, weight("attention.self.value.weight", {h, h}),
                      weight("attention.self.value.bias", {h}), h);
    Matrix ctx(t * h, 0.0), s(t);
    const double scale = 1.0 / std::sqrt(double(d));
    for (int64_t hd = 0; hd < heads; ++hd)
      for (int64_t i = 0; i < t; ++i) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < t; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < d; ++e) dot += q[i * h + hd * d + e] * k[j * h + hd * d + e];
          s[j] = dot * scale;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < t; ++j) sum += (s[j] = std::exp(s[j] - mx));
        for (int64_t j = 0; j < t; ++j)
          for (int64_t e = 0; e < d; ++e)
            ctx[i * h + hd * d + e] += s[j] / sum * v[j * h + hd * d + e];
      }
    Matrix a = linear(ctx, t, h, weight("attention.output.dense.weight", {h, h}),
                      weight("attention.output.dense.bias", {h}), h);
    for (int64_t e = 0; e < t * h; ++e) a[e] += x[e];
    layer_norm(a, t, h, weight("attention.output.LayerNorm.weight", {h}),
               weight("attention.output.LayerNorm.bias", {h}), c.eps);
    Matrix g = linear(a, t, h, weight("intermediate.dense.weight", {f, h}),
                      weight("intermediate.dense.bias", {f}), f);
    for (double& e : g) e = 0.5 * e * (1.0 + std::erf(e / std::sqrt(2.0)));
    x = linear(g, t, f, weight("output.dense.weight", {h, f}), weight("output.dense.bias", {h}), h);
    for (int64_t e = 0; e < t * h; ++e) x[e] += a[e];
    layer_norm(x, t, h, weight("output.LayerNorm.weight", {h}),
               weight("output.LayerNorm.bias", {h}), c.eps);
  }
  return x;
}

}  // namespace dietcode::model
