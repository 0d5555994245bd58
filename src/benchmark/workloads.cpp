#include "benchmark/workloads.h"

#include <fmt/format.h>

#include <optional>

#include "ops/attention.h"
#include "ops/batch_matmul.h"
#include "ops/dense.h"
#include "ops/row_ops.h"
#include "support/error.h"

namespace dietcode::bench {

GemmProblem WorkloadLayer::problem(int64_t t) const {
  return GemmProblem{batch, t_in_m ? t : m, t_in_n ? t : n, t_in_k ? t : k, b_layout_nk, b_shared};
}

RowProblem WorkloadLayer::row_problem(int64_t t) const {
  return RowProblem{row_kind, row_batch * t, row_n > 0 ? row_n : t, 1e-5};
}

namespace {

// The row operators the peers have (oneDNN's primitives), by spec name.
std::optional<RowOpKind> row_kind_of(const std::string& op) {
  if (op == "layer_norm") return RowOpKind::LayerNorm;
  if (op == "add_layer_norm") return RowOpKind::AddLayerNorm;
  if (op == "softmax") return RowOpKind::Softmax;
  if (op == "gelu") return RowOpKind::Gelu;
  return std::nullopt;
}

// The epilogues whose separate pass the peers have, by spec text.
std::optional<RowOpKind> epilogue_pass_of(const std::string& epilogue) {
  ops::Epilogue e = ops::parse_epilogue(epilogue);
  if (e == ops::Epilogue::Bias) return RowOpKind::Bias;
  if (e == ops::Epilogue::BiasGelu) return RowOpKind::BiasGelu;
  if (e == ops::parse_epilogue("bias+residual")) return RowOpKind::BiasResidual;
  return std::nullopt;
}

}  // namespace

WorkloadLayer layer_for_operator(const std::string& name, const ops::OperatorSpec& spec) {
  if (ops::is_row_operator(spec.op)) {
    std::optional<RowOpKind> kind = row_kind_of(spec.op);
    if (!kind)
      user_error("{}: {}: the peers have layer_norm, add_layer_norm, softmax and gelu", name,
                 spec.op);
    WorkloadLayer l;
    l.name = name;
    l.op = spec.build();
    l.is_row = true;
    l.row_kind = *kind;
    l.row_n = spec.n;
    return l;
  }
  if (spec.op == "attention") {
    if (spec.batch != 1 || spec.mask)
      user_error(
          "{}: attention with batch {}, mask {}: the peers' composition computes one "
          "sequence without a mask",
          name, spec.batch, spec.mask);
    WorkloadLayer l;
    l.name = name;
    l.op = spec.build();
    l.is_attention = true;
    l.packed_qkv = spec.packed_qkv;
    l.batch = spec.n;
    l.k = spec.k;
    return l;
  }
  WorkloadLayer l;
  if (spec.epilogue != "none") {
    l.epilogue_pass = epilogue_pass_of(spec.epilogue);
    if (!l.epilogue_pass || spec.op != "dense")
      user_error(
          "{}: epilogue {}: the peers' composition has a dense layer's bias, bias+gelu and "
          "bias+residual; bench measures those and operators without an epilogue",
          name, spec.epilogue);
  }
  l.name = name;
  l.op = spec.build();
  l.n = spec.n_is_m ? 0 : spec.n;
  l.k = spec.k_is_m ? 0 : spec.k;
  l.t_in_n = spec.n_is_m;
  l.t_in_k = spec.k_is_m;
  if (spec.op == "batch_matmul") {
    l.batch = spec.batch;
    l.b_shared = false;
    l.b_layout_nk = spec.layout == "NT";
  }
  return l;
}

bool layer_computes(const WorkloadLayer& layer, const ops::OperatorSpec& spec) {
  if (layer.is_row)
    return row_kind_of(spec.op) == layer.row_kind && layer.row_batch == 1 && layer.row_n == spec.n;
  if (layer.is_attention)
    return spec.op == "attention" && spec.batch == 1 && !spec.mask &&
           spec.packed_qkv == layer.packed_qkv && layer.batch == spec.n && layer.k == spec.k;
  if (spec.op == "attention" || ops::is_row_operator(spec.op)) return false;
  if (spec.epilogue != "none" && (spec.op != "dense" || !epilogue_pass_of(spec.epilogue)))
    return false;
  WorkloadLayer want = layer_for_operator("", spec);
  return layer.epilogue_pass == want.epilogue_pass && layer.t_in_m && layer.t_in_n == want.t_in_n &&
         layer.t_in_k == want.t_in_k && layer.batch == want.batch && layer.n == want.n &&
         layer.k == want.k && layer.b_layout_nk == want.b_layout_nk &&
         layer.b_shared == want.b_shared;
}

std::vector<std::string> workload_names() {
  return {"bert-dense", "bert-dense-2304x768", "bert-dense-epilogue", "bert-attention",
          "bert-elementwise"};
}

Workload make_workload(const std::string& name, int64_t t_max) {
  te::ShapeVar t = te::shape_var("T", 1, t_max);
  ir::Expr tv = t.var;
  Workload w{name, {}};
  if (name == "bert-dense" || name == "bert-dense-2304x768") {
    std::vector<std::pair<int64_t, int64_t>> layers = {
        {2304, 768}, {768, 768}, {3072, 768}, {768, 3072}};
    if (name == "bert-dense-2304x768") layers.resize(1);
    for (auto [n, k] : layers) {
      WorkloadLayer l;
      l.name = fmt::format("bert-dense-{}x{}", n, k);
      l.op = ops::dense({t}, tv, n, k);
      l.n = n;
      l.k = k;
      w.layers.push_back(std::move(l));
    }
    return w;
  }
  if (name == "bert-dense-epilogue") {  // the layers of BERT whose epilogue is more than a bias
    struct Layer {
      int64_t n, k;
      const char* epilogue;
      RowOpKind pass;
    };
    for (const Layer& d : {Layer{768, 768, "bias+residual", RowOpKind::BiasResidual},
                           Layer{3072, 768, "bias+gelu", RowOpKind::BiasGelu},
                           Layer{768, 3072, "bias+residual", RowOpKind::BiasResidual}}) {
      WorkloadLayer l;
      l.name = fmt::format("bert-dense-{}x{}-{}", d.n, d.k, d.epilogue);
      l.op = ops::dense({t}, tv, d.n, d.k, ops::parse_epilogue(d.epilogue));
      l.n = d.n;
      l.k = d.k;
      l.epilogue_pass = d.pass;
      w.layers.push_back(std::move(l));
    }
    return w;
  }
  if (name == "bert-attention") {
    WorkloadLayer qk;  // scores[h] = Q[h] (T x 64) * K[h]^T, K stored [T, 64]: NT
    qk.name = "bert-attention-qk-b12";
    qk.op = ops::batch_matmul({t}, 12, tv, tv, 64, ops::Layout::NT);
    qk.batch = 12;
    qk.t_in_n = true;
    qk.k = 64;
    qk.b_shared = false;
    WorkloadLayer sv;  // context[h] = S[h] (T x T) * V[h] (T x 64): NN
    sv.name = "bert-attention-sv-b12";
    sv.op = ops::batch_matmul({t}, 12, tv, 64, tv, ops::Layout::NN);
    sv.batch = 12;
    sv.t_in_k = true;
    sv.n = 64;
    sv.b_layout_nk = false;
    sv.b_shared = false;
    WorkloadLayer fused;  // O[h] = softmax(Q[h] K[h]^T / 8) V[h], one kernel
    fused.name = "bert-attention-fused-b12";
    fused.op = ops::attention(1, t_max, 12, ops::attention_shapes(1, 12, 64, false));
    fused.is_attention = true;
    fused.batch = 12;
    fused.k = 64;
    w.layers = {qk, sv, fused};
    return w;
  }
  if (name == "bert-elementwise") {
    auto row_layer = [&](const char* layer_name, te::Operator op, RowOpKind kind, int64_t batch,
                         int64_t n) {
      WorkloadLayer l;
      l.name = layer_name;
      l.op = std::move(op);
      l.is_row = true;
      l.row_kind = kind;
      l.row_batch = batch;
      l.row_n = n;
      w.layers.push_back(std::move(l));
    };
    using ops::kM;
    row_layer("bert-layer_norm-768", ops::layer_norm(1, t_max, 768), RowOpKind::LayerNorm, 1, 768);
    row_layer("bert-add_layer_norm-768", ops::add_layer_norm(1, t_max, 768),
              RowOpKind::AddLayerNorm, 1, 768);
    row_layer("bert-softmax-12xTxT", ops::softmax(1, t_max, {12, kM, kM}), RowOpKind::Softmax, 12,
              0);
    row_layer("bert-gelu-3072", ops::gelu(1, t_max, {kM, 3072}), RowOpKind::Gelu, 1, 3072);
    return w;
  }
  std::string known;
  for (const std::string& n : workload_names()) known += (known.empty() ? "" : ", ") + n;
  user_error("unknown workload '{}'; expected one of: {}", name, known);
}

}  // namespace dietcode::bench
