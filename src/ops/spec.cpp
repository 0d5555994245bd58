#include "ops/spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "ops/attention.h"
#include "ops/batch_matmul.h"
#include "ops/dense.h"
#include "ops/row_ops.h"
#include "support/error.h"

namespace dietcode::ops {

te::Operator OperatorSpec::build() const {
  if (n < 1) user_error("operator N = {}: expected a positive integer", n);
  if (k < 1) user_error("operator K = {}: expected a positive integer", k);
  if (batch < 1) user_error("operator batch = {}: expected a positive integer", batch);
  if (m_min < 1 || m_max < m_min)
    user_error("operator M range {}..{}: expected 1 <= lo <= hi", m_min, m_max);
  // Bounds that keep every extent and buffer size far from int64 overflow.
  constexpr int64_t kMaxDim = int64_t{1} << 24, kMaxElements = int64_t{1} << 40;
  for (auto [name, v] :
       {std::pair<const char*, int64_t>{"N", n}, {"K", k}, {"batch", batch}, {"M", m_max}})
    if (v > kMaxDim) user_error("operator {} = {}: larger than {}", name, v, kMaxDim);
  const int64_t n_max = n_is_m ? m_max : n, k_max = k_is_m ? m_max : k;
  if (batch * std::max(m_max, n_max) * std::max(n_max, k_max) > kMaxElements)
    user_error("operator buffers of {} x {} x {} elements: larger than {}", batch,
               std::max(m_max, n_max), std::max(n_max, k_max), kMaxElements);
  std::set<int64_t> seen;
  for (const te::WeightedInstance& i : instances)
    if (!seen.insert(i.value).second)
      user_error("operator instance M = {} is listed twice", i.value);
  if ((n_is_m || k_is_m) && op != "batch_matmul")
    user_error("operator {}: only batch_matmul takes N or K = M", op);
  te::ShapeVar m_var = te::shape_var("M", m_min, m_max, instances);
  ir::Expr m_expr = m_var.var;
  if (op == "dense") return dense({m_var}, m_expr, n, k, parse_epilogue(epilogue));
  if (is_row_operator(op)) {
    if (epilogue != "none") user_error("epilogue {}: {} takes no epilogue", epilogue, op);
    if (op == "add") return add(m_min, m_max, {kM, n}, {kM, n});
    if (op == "gelu") return gelu(m_min, m_max, {kM, n});
    if (op == "gelu_tanh") return gelu_tanh(m_min, m_max, {kM, n});
    if (op == "softmax") return softmax(m_min, m_max, {kM, n});
    if (op == "layer_norm") return layer_norm(m_min, m_max, n, eps);
    return add_layer_norm(m_min, m_max, n, eps);
  }
  if (op == "attention") {
    if (epilogue != "none") user_error("epilogue {}: attention takes no epilogue", epilogue);
    if (packed_qkv) return attention_packed_qkv(m_min, m_max, batch, n, k, mask);
    return attention(m_min, m_max, n, attention_shapes(batch, n, k, mask));
  }
  if (packed_qkv) user_error("operator {}: only attention takes packed_qkv", op);
  if (mask) user_error("operator {}: only attention takes a mask", op);
  if (op == "batch_matmul") {
    if (epilogue != "none") user_error("epilogue {}: batch_matmul takes no epilogue", epilogue);
    if (n_is_m && k_is_m) user_error("operator batch_matmul: N and K cannot both be M");
    return batch_matmul({m_var}, batch, m_expr, n_is_m ? m_expr : ir::Expr(n),
                        k_is_m ? m_expr : ir::Expr(k), parse_layout(layout));
  }
  user_error(
      "operator '{}': unknown; expected dense, batch_matmul, add, gelu, gelu_tanh, softmax, "
      "layer_norm, add_layer_norm or attention",
      op);
}

bool is_row_operator(const std::string& op) {
  for (const char* name : {"add", "gelu", "gelu_tanh", "softmax", "layer_norm", "add_layer_norm"})
    if (op == name) return true;
  return false;
}

std::vector<std::vector<int64_t>> OperatorSpec::declared_shapes() const {
  std::vector<std::vector<int64_t>> out;
  if (!instances.empty()) {
    for (const te::WeightedInstance& i : instances) out.push_back({i.value});
  } else {
    for (int64_t m = m_min; m <= m_max; ++m) out.push_back({m});
  }
  return out;
}

std::vector<double> OperatorSpec::declared_weights() const {
  if (instances.empty()) return std::vector<double>(m_max - m_min + 1, 1.0);
  std::vector<double> out;
  for (const te::WeightedInstance& i : instances) out.push_back(i.weight);
  return out;
}

std::string OperatorSpec::describe() const {
  std::string s = fmt::format("{} N={} K={} M={}..{}", op, n_is_m ? "M" : std::to_string(n),
                              k_is_m ? "M" : std::to_string(k), m_min, m_max);
  if (op == "dense") s += " epilogue=" + epilogue;
  if (op == "batch_matmul") s += fmt::format(" batch={} layout={}", batch, layout);
  if (op == "attention")
    s += fmt::format(" batch={} mask={}{}", batch, mask, packed_qkv ? " packed_qkv" : "");
  if (op == "layer_norm" || op == "add_layer_norm") s += fmt::format(" eps={}", eps);
  if (!instances.empty()) s += fmt::format(" ({} weighted instances)", instances.size());
  return s;
}

bool OperatorSpec::operator==(const OperatorSpec& o) const {
  return to_json(*this) == to_json(o);
}

nlohmann::json to_json(const OperatorSpec& s) {
  nlohmann::json j = {{"op", s.op}, {"N", s.n}, {"K", s.k}, {"M", {s.m_min, s.m_max}}};
  if (s.n_is_m) j["N"] = "M";
  if (s.k_is_m) j["K"] = "M";
  if (s.op == "dense") j["epilogue"] = s.epilogue;
  if (s.op == "batch_matmul") {
    j["batch"] = s.batch;
    j["layout"] = s.layout;
  }
  if (s.op == "attention") {
    j["batch"] = s.batch;
    j["mask"] = s.mask;
    if (s.packed_qkv) j["packed_qkv"] = true;
  }
  if (s.op == "layer_norm" || s.op == "add_layer_norm") j["eps"] = s.eps;
  if (!s.instances.empty()) {
    nlohmann::json inst = nlohmann::json::array();
    for (const te::WeightedInstance& i : s.instances) inst.push_back({i.value, i.weight});
    j["instances"] = inst;
  }
  return j;
}

namespace {

const nlohmann::json& field(const nlohmann::json& j, const char* name) {
  if (!j.is_object()) user_error("operator spec: expected a JSON object");
  auto it = j.find(name);
  if (it == j.end()) user_error("operator spec: missing field '{}'", name);
  return *it;
}

int64_t integer_field(const nlohmann::json& j, const char* name) {
  const nlohmann::json& v = field(j, name);
  if (!v.is_number_integer()) user_error("operator spec: field '{}' must be an integer", name);
  return v.get<int64_t>();
}

std::string string_field(const nlohmann::json& j, const char* name, const char* fallback) {
  if (!j.contains(name)) return fallback;
  if (!j[name].is_string()) user_error("operator spec: field '{}' must be a string", name);
  return j[name].get<std::string>();
}

}  // namespace

OperatorSpec operator_spec_from_json(const nlohmann::json& j) {
  OperatorSpec s;
  const nlohmann::json& op = field(j, "op");
  if (!op.is_string()) user_error("operator spec: field 'op' must be a string");
  s.op = op.get<std::string>();
  // "N": "M" / "K": "M": the shape variable (batch_matmul).
  auto dim = [&](const char* name, int64_t& value, bool& is_m) {
    const nlohmann::json& v = field(j, name);
    if (v.is_string() && v.get<std::string>() == "M") {
      is_m = true;
      value = 1;
    } else {
      value = integer_field(j, name);
    }
  };
  dim("N", s.n, s.n_is_m);
  dim("K", s.k, s.k_is_m);
  const nlohmann::json& m = field(j, "M");
  if (!m.is_array() || m.size() != 2 || !m[0].is_number_integer() || !m[1].is_number_integer())
    user_error("operator spec: field 'M' must be [lo, hi] (integers)");
  s.m_min = m[0].get<int64_t>();
  s.m_max = m[1].get<int64_t>();
  s.epilogue = string_field(j, "epilogue", "none");
  s.layout = string_field(j, "layout", "NT");
  if (j.contains("batch")) s.batch = integer_field(j, "batch");
  if (j.contains("mask")) {
    if (!j["mask"].is_boolean()) user_error("operator spec: field 'mask' must be true or false");
    s.mask = j["mask"].get<bool>();
  }
  if (j.contains("packed_qkv")) {
    if (!j["packed_qkv"].is_boolean())
      user_error("operator spec: field 'packed_qkv' must be true or false");
    s.packed_qkv = j["packed_qkv"].get<bool>();
  }
  if (j.contains("eps")) {
    if (!j["eps"].is_number()) user_error("operator spec: field 'eps' must be a number");
    s.eps = j["eps"].get<double>();
  }
  if (j.contains("instances")) {
    const nlohmann::json& inst = j["instances"];
    if (!inst.is_array()) user_error("operator spec: field 'instances' must be an array");
    for (const nlohmann::json& i : inst) {
      if (!i.is_array() || i.size() != 2 || !i[0].is_number_integer() || !i[1].is_number())
        user_error("operator spec: each instance must be [M, weight]");
      s.instances.push_back({i[0].get<int64_t>(), i[1].get<double>()});
    }
  }
  s.build();  // validates every field
  return s;
}

}  // namespace dietcode::ops
