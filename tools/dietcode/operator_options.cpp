#include "tools/dietcode/operator_options.h"

#include <fmt/format.h>

#include "ops/batch_matmul.h"
#include "ops/dense.h"
#include "support/error.h"
#include "support/parse.h"

namespace dietcode::tool {

void OperatorOptions::add_to(CLI::App& app) {
  app.add_option("--op", op,
                 "operator: dense, batch_matmul, a row operator: add, gelu, gelu_tanh, "
                 "softmax, layer_norm, add_layer_norm, or attention (--batch sequences of --N "
                 "heads of size --K, T = M)")
      ->capture_default_str();
  app.add_option("--layout", layout, "batch_matmul layout of B: NN ([b,K,N]) or NT ([b,N,K])")
      ->capture_default_str();
  app.add_option("--epilogue", epilogue,
                 "dense epilogue: none, or steps joined by + from bias, scale, residual, relu, "
                 "gelu, gelu_tanh, tanh (bias_relu, bias_gelu: shorthands)")
      ->capture_default_str();
  app.add_option("--N", n, "N: fixed, or M (batch_matmul: the shape variable, as T in Q K^T)")
      ->capture_default_str();
  app.add_option("--K", k, "K: fixed, or M (batch_matmul: the shape variable, as T in S V)")
      ->capture_default_str();
  app.add_option("--batch", batch, "batch_matmul batch (fixed)")->capture_default_str();
  app.add_option("--M", m, "M values: a list '1,17,127', a range '1..128', or both")
      ->capture_default_str();
  app.add_flag("--mask", mask, "attention: add a [batch, T] additive mask input");
  app.add_flag("--packed-qkv", packed_qkv,
               "attention: read Q, K, V from one [batch, T, 3 x heads x size] input (a QKV "
               "projection's output) and write [batch, T, heads x size]");
  app.add_option("--eps", eps, "layer_norm, add_layer_norm: epsilon added to the variance")
      ->capture_default_str();
  app.add_option("--range", range, "declared range of M, 'LO..HI' (default: min..max of --M)");
}

std::vector<int64_t> OperatorOptions::m_values() const {
  return parse_int_list(m, "--M");
}

namespace {

// "M" (the shape variable) or a positive integer.
int64_t parse_dim(const std::string& text, const char* name, bool& is_m) {
  is_m = text == "M";
  if (is_m) return 1;
  std::vector<int64_t> v = parse_int_list(text, name);
  if (v.size() != 1 || v[0] < 1) user_error("{} {}: expected a positive integer, or M", name, text);
  return v[0];
}

}  // namespace

ops::OperatorSpec OperatorOptions::spec() const {
  ops::OperatorSpec s;
  s.n = parse_dim(n, "--N", s.n_is_m);
  s.k = parse_dim(k, "--K", s.k_is_m);
  if ((s.n_is_m || s.k_is_m) && op != "batch_matmul")
    user_error("--N/--K M: only batch_matmul takes the shape variable as N or K");
  if (batch < 1) user_error("--batch {}: expected a positive integer", batch);
  std::vector<int64_t> declared = range.empty() ? m_values() : parse_int_list(range, "--range");
  s.op = op;
  s.batch = batch;
  s.layout = layout;
  s.epilogue = epilogue;
  s.mask = mask;
  s.packed_qkv = packed_qkv;
  s.eps = eps;
  if (packed_qkv && op != "attention") user_error("--packed-qkv: only attention takes it");
  s.m_min = declared.front();
  s.m_max = declared.back();
  if (op == "dense") {
    ops::parse_epilogue(epilogue);
  } else if (op == "batch_matmul") {
    if (epilogue != "none") user_error("--epilogue {}: batch_matmul takes no epilogue", epilogue);
    ops::parse_layout(layout);
  } else if (ops::is_row_operator(op) || op == "attention") {
    if (epilogue != "none") user_error("--epilogue {}: {} takes no epilogue", epilogue, op);
  } else {
    user_error(
        "--op '{}': unknown operator; expected dense, batch_matmul, add, gelu, gelu_tanh, "
        "softmax, layer_norm, add_layer_norm or attention",
        op);
  }
  return s;
}

te::Operator OperatorOptions::build() const {
  return spec().build();
}

std::string OperatorOptions::command_line(int64_t m_value) const {
  std::vector<int64_t> declared = range.empty() ? m_values() : parse_int_list(range, "--range");
  std::string s = fmt::format("--op {} --N {} --K {} --M {} --range {}..{}", op, n, k, m_value,
                              declared.front(), declared.back());
  if (op == "dense") s += " --epilogue " + epilogue;
  if (op == "batch_matmul") s += fmt::format(" --layout {} --batch {}", layout, batch);
  if (op == "attention")
    s += fmt::format(" --batch {}{}{}", batch, mask ? " --mask" : "",
                     packed_qkv ? " --packed-qkv" : "");
  if (op == "layer_norm" || op == "add_layer_norm") s += fmt::format(" --eps {}", eps);
  return s;
}

}  // namespace dietcode::tool
