#include "model/bert.h"

#include <cmath>

#include "support/error.h"

namespace dietcode::model {

void BertConfig::check() const {
  if (layers < 1 || hidden < 1 || heads < 1 || ffn < 1 || hidden % heads != 0)
    user_error(
        "BERT config: {} layers, hidden {}, {} heads, ffn {}: expected positive sizes with "
        "hidden a multiple of heads",
        layers, hidden, heads, ffn);
  if (!(eps > 0) || !std::isfinite(eps))
    user_error("BERT config: eps {}; expected a positive finite number", eps);
  if (t_min < 1 || t_max < t_min)
    user_error("BERT config: sequence lengths {}..{}; expected 1 <= min <= max", t_min, t_max);
}

std::vector<NamedOperator> bert_operators(const BertConfig& c) {
  c.check();
  auto spec = [&](const char* op, int64_t n, int64_t k, const char* epilogue = "none") {
    ops::OperatorSpec s;
    s.op = op;
    s.n = n;
    s.k = k;
    s.epilogue = epilogue;
    s.m_min = c.t_min;
    s.m_max = c.t_max;
    return s;
  };
  ops::OperatorSpec attention = spec("attention", c.heads, c.hidden / c.heads);
  attention.batch = 1;
  attention.packed_qkv = true;
  ops::OperatorSpec ln = spec("layer_norm", c.hidden, 64);
  ln.eps = c.eps;
  return {{"qkv", spec("dense", 3 * c.hidden, c.hidden, "bias")},
          {"attention", attention},
          {"out", spec("dense", c.hidden, c.hidden, "bias+residual")},
          {"ln", ln},
          {"ffn1", spec("dense", c.ffn, c.hidden, "bias+gelu")},
          {"ffn2", spec("dense", c.hidden, c.ffn, "bias+residual")}};
}

Graph bert_encoder(const BertConfig& c) {
  std::vector<NamedOperator> ops = bert_operators(c);
  auto op = [&](const char* name) -> const ops::OperatorSpec& {
    for (const NamedOperator& o : ops)
      if (o.name == name) return o.op;
    internal_error(__FILE__, __LINE__, "no BERT operator of that name");
  };
  const int64_t h = c.hidden;
  Graph g;
  int x = g.input("input", {kT, h});
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    auto w = [&](const std::string& name, std::vector<int64_t> shape) {
      return g.weight(p + name, shape);
    };
    int qkv = g.add(
        p + "attention.self.qkv", op("qkv"),
        {x, w("attention.self.qkv.weight", {3 * h, h}), w("attention.self.qkv.bias", {3 * h})},
        {kT, 3 * h});
    int ctx = g.add(p + "attention.self", op("attention"), {qkv}, {kT, h});
    int a = g.add(
        p + "attention.output.dense", op("out"),
        {ctx, w("attention.output.dense.weight", {h, h}), w("attention.output.dense.bias", {h}), x},
        {kT, h});
    int x1 = g.add(
        p + "attention.output.LayerNorm", op("ln"),
        {a, w("attention.output.LayerNorm.weight", {h}), w("attention.output.LayerNorm.bias", {h})},
        {kT, h});
    int f1 = g.add(
        p + "intermediate.dense", op("ffn1"),
        {x1, w("intermediate.dense.weight", {c.ffn, h}), w("intermediate.dense.bias", {c.ffn})},
        {kT, c.ffn});
    int f2 =
        g.add(p + "output.dense", op("ffn2"),
              {f1, w("output.dense.weight", {h, c.ffn}), w("output.dense.bias", {h}), x1}, {kT, h});
    x = g.add(p + "output.LayerNorm", op("ln"),
              {f2, w("output.LayerNorm.weight", {h}), w("output.LayerNorm.bias", {h})}, {kT, h});
  }
  g.set_output(x);
  return g;
}

}  // namespace dietcode::model
