#include "tune/workload.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "model/bert.h"
#include "support/error.h"
#include "support/json.h"

namespace dietcode::tune {

namespace {

WorkloadOperator dense_layer(const std::string& name, int64_t n, int64_t k,
                             const std::string& epilogue = "none") {
  WorkloadOperator o;
  o.name = name;
  o.op.op = "dense";
  o.op.n = n;
  o.op.k = k;
  o.op.epilogue = epilogue;
  o.op.m_min = 1;
  o.op.m_max = 128;
  return o;
}

// The line where the value at `path` ("operators[0].N") starts in JSON text that has
// already parsed (so nesting is bounded by kMaxJsonDepth); 0 if absent. Only subtrees on
// the way to `path` build child paths, so a hostile wide or deep file costs one scan.
class KeyLine {
 public:
  KeyLine(const std::string& text, const std::string& path) : t_(text), target_(path) { value(""); }
  int line() const { return found_; }

 private:
  void skip() {
    while (i_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[i_]))) {
      if (t_[i_] == '\n') ++line_;
      ++i_;
    }
  }
  std::string string() {
    std::string s;
    ++i_;  // opening quote
    while (i_ < t_.size() && t_[i_] != '"') {
      if (t_[i_] == '\\') ++i_;
      if (i_ < t_.size()) s += t_[i_++];
    }
    ++i_;
    return s;
  }
  // On the way to the target: `path` is the target or one of its prefixes.
  bool on_the_way(const std::string& path) const {
    return target_.compare(0, path.size(), path) == 0 &&
           (path.size() == target_.size() || path.empty() || target_[path.size()] == '.' ||
            target_[path.size()] == '[');
  }
  void note(const std::string& path, int at) {
    if (found_ == 0 && path == target_) found_ = at;
  }
  void value(const std::string& path) {
    skip();
    if (i_ >= t_.size()) return;
    bool follow = on_the_way(path);
    if (t_[i_] == '{') {
      ++i_;
      for (skip(); i_ < t_.size() && t_[i_] != '}'; skip()) {
        if (t_[i_] == ',') {
          ++i_;
          continue;
        }
        int at = line_;
        std::string key = string();
        std::string child = follow ? (path.empty() ? key : path + "." + key) : std::string();
        if (follow) note(child, at);
        skip();
        ++i_;  // colon
        value(follow ? child : kNowhere);
      }
      ++i_;
    } else if (t_[i_] == '[') {
      ++i_;
      int index = 0;
      for (skip(); i_ < t_.size() && t_[i_] != ']'; skip()) {
        if (t_[i_] == ',') {
          ++i_;
          continue;
        }
        std::string child = follow ? fmt::format("{}[{}]", path, index) : std::string();
        ++index;
        if (follow) note(child, line_);
        value(follow ? child : kNowhere);
      }
      ++i_;
    } else if (t_[i_] == '"') {
      string();
    } else {
      while (i_ < t_.size() && t_[i_] != ',' && t_[i_] != '}' && t_[i_] != ']' &&
             !std::isspace(static_cast<unsigned char>(t_[i_])))
        ++i_;
    }
  }

  inline static const std::string kNowhere = "\x01";  // a path that leads nowhere
  const std::string& t_;
  const std::string& target_;
  size_t i_ = 0;
  int line_ = 1;
  int found_ = 0;
};

}  // namespace

std::vector<std::string> workload_presets() {
  return {"bert-base-dense", "bert-dense-2304x768", "bert-base-epilogue", "bert-base"};
}

WorkloadSpec preset_workload(const std::string& name) {
  if (name == "bert-base-dense")
    return {name,
            {dense_layer("qkv-2304x768", 2304, 768), dense_layer("out-768x768", 768, 768),
             dense_layer("ffn1-3072x768", 3072, 768), dense_layer("ffn2-768x3072", 768, 3072)}};
  if (name == "bert-dense-2304x768") return {name, {dense_layer("qkv-2304x768", 2304, 768)}};
  if (name == "bert-base-epilogue")  // the dense layers whose epilogue is more than a bias
    return {name,
            {dense_layer("out-768x768-bias+residual", 768, 768, "bias+residual"),
             dense_layer("ffn1-3072x768-bias+gelu", 3072, 768, "bias+gelu"),
             dense_layer("ffn2-768x3072-bias+residual", 768, 3072, "bias+residual")}};
  if (name == "bert-base") {         // every distinct operator of the encoder: a model directory
    WorkloadSpec w{name, {}, true};  // twelve layers of weights, 340 MB
    for (const model::NamedOperator& o : model::bert_operators(model::BertConfig{}))
      w.operators.push_back({o.name, o.op});
    return w;
  }
  std::string known;
  for (const std::string& p : workload_presets()) known += (known.empty() ? "" : ", ") + p;
  user_error("unknown preset workload '{}'; expected one of: {} (or a spec file ending in .json)",
             name, known);
}

WorkloadSpec parse_workload_spec(const std::string& text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
      if (depth > kMaxJsonDepth)
        throw Error(fmt::format("JSON nested deeper than {} levels", kMaxJsonDepth));
      return true;
    });
  } catch (const Error& e) {
    user_error("{}: {}", path, e.what());
  } catch (const nlohmann::json::parse_error& e) {
    // Line and column of the failing byte.
    size_t byte = std::min<size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    int line = 1, column = 1;
    for (size_t i = 0; i < byte; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string what = e.what();
    size_t colon = what.rfind(": ");
    user_error("{}:{}:{}: JSON syntax error: {}", path, line, column,
               colon == std::string::npos ? what : what.substr(colon + 2));
  } catch (const nlohmann::json::exception& e) {
    // e.g. a number out of range (1e400)
    user_error("{}: invalid JSON: {}", path, e.what());
  }
  auto fail = [&](const std::string& field, const std::string& why) -> void {
    int line = field.empty() ? 0 : KeyLine(text, field).line();
    if (line > 0) user_error("{}:{}: {}: {}", path, line, field, why);
    user_error("{}: {}: {}", path, field.empty() ? "top level" : field, why);
  };
  if (!j.is_object()) fail("", "expected a JSON object with \"name\" and \"operators\"");
  static const std::set<std::string> top_keys = {"name", "operators", "cold_weights"};
  for (auto& [k, v] : j.items())
    if (!top_keys.count(k)) fail(k, "unknown field; expected name, operators, cold_weights");
  WorkloadSpec w;
  if (!j.contains("name") || !j["name"].is_string() || j["name"].get<std::string>().empty())
    fail("name", "expected a non-empty string");
  w.name = j["name"].get<std::string>();
  if (j.contains("cold_weights")) {
    if (!j["cold_weights"].is_boolean()) fail("cold_weights", "expected true or false");
    w.cold_weights = j["cold_weights"].get<bool>();
  }
  if (!j.contains("operators") || !j["operators"].is_array() || j["operators"].empty())
    fail("operators", "expected a non-empty array of operators");
  static const std::set<std::string> op_keys = {"name", "op",         "N",      "K",
                                                "M",    "batch",      "layout", "epilogue",
                                                "mask", "packed_qkv", "eps",    "instances"};
  std::set<std::string> names;
  for (size_t i = 0; i < j["operators"].size(); ++i) {
    const nlohmann::json& o = j["operators"][i];
    std::string at = fmt::format("operators[{}]", i);
    if (!o.is_object()) fail(at, "expected an object");
    for (auto& [k, v] : o.items())
      if (!op_keys.count(k))
        fail(at + "." + k,
             "unknown field; expected name, op, N, K, M, batch, layout, epilogue, "
             "mask, packed_qkv, eps, instances");
    WorkloadOperator wo;
    if (!o.contains("name") || !o["name"].is_string()) fail(at + ".name", "expected a string");
    wo.name = o["name"].get<std::string>();
    if (wo.name.empty() || wo.name.size() > 64 ||
        wo.name.find_first_not_of(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") !=
            std::string::npos)
      fail(at + ".name", "expected 1-64 letters, digits, '-' or '_' (it names a file)");
    if (!names.insert(wo.name).second) fail(at + ".name", "'" + wo.name + "' is used twice");
    auto integer = [&](const char* key, bool required, int64_t fallback) -> int64_t {
      if (!o.contains(key)) {
        if (required) fail(at, fmt::format("missing field '{}'", key));
        return fallback;
      }
      const nlohmann::json& v = o[key];
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > (int64_t{1} << 24))
        fail(at + "." + key, fmt::format("expected a positive integer (at most 2^24), got {}",
                                         v.dump().substr(0, 40)));
      return v.get<int64_t>();
    };
    auto text_field = [&](const char* key, const char* fallback) -> std::string {
      if (!o.contains(key)) return fallback;
      if (!o[key].is_string()) fail(at + "." + key, "expected a string");
      return o[key].get<std::string>();
    };
    wo.op.op = text_field("op", "");
    if (wo.op.op != "dense" && wo.op.op != "batch_matmul" && wo.op.op != "attention" &&
        !ops::is_row_operator(wo.op.op))
      fail(o.contains("op") ? at + ".op" : at,
           fmt::format("expected \"op\": dense, batch_matmul, attention or a row operator (add, "
                       "gelu, gelu_tanh, softmax, layer_norm, add_layer_norm), got '{}'",
                       wo.op.op));
    // N and K: integers, or "M" (batch_matmul: the shape variable, as T in Q K^T).
    auto dim = [&](const char* key, bool& is_m) -> int64_t {
      is_m = o.contains(key) && o[key].is_string() && o[key].get<std::string>() == "M";
      return is_m ? 1 : integer(key, true, 0);
    };
    wo.op.n = dim("N", wo.op.n_is_m);
    wo.op.k = o.contains("K") || !ops::is_row_operator(wo.op.op) ? dim("K", wo.op.k_is_m) : 64;
    if (o.contains("mask")) {
      if (!o["mask"].is_boolean()) fail(at + ".mask", "expected true or false");
      wo.op.mask = o["mask"].get<bool>();
    }
    if (o.contains("packed_qkv")) {
      if (!o["packed_qkv"].is_boolean()) fail(at + ".packed_qkv", "expected true or false");
      wo.op.packed_qkv = o["packed_qkv"].get<bool>();
    }
    if (o.contains("eps")) {
      if (!o["eps"].is_number()) fail(at + ".eps", "expected a number");
      wo.op.eps = o["eps"].get<double>();
    }
    wo.op.batch = integer("batch", false, 1);
    wo.op.layout = text_field("layout", "NT");
    wo.op.epilogue = text_field("epilogue", "none");
    if (!o.contains("M")) fail(at, "missing field 'M' ([lo, hi])");
    const nlohmann::json& m = o["M"];
    if (!m.is_array() || m.size() != 2 || !m[0].is_number_integer() || !m[1].is_number_integer() ||
        m[0].get<int64_t>() < 1 || m[1].get<int64_t>() < m[0].get<int64_t>() ||
        m[1].get<int64_t>() > (int64_t{1} << 20))
      fail(at + ".M", "expected [lo, hi] with 1 <= lo <= hi <= 2^20");
    wo.op.m_min = m[0].get<int64_t>();
    wo.op.m_max = m[1].get<int64_t>();
    if (o.contains("instances")) {
      const nlohmann::json& inst = o["instances"];
      if (!inst.is_array() || inst.empty())
        fail(at + ".instances", "expected a non-empty array of [M, weight] pairs");
      for (size_t k = 0; k < inst.size(); ++k) {
        const nlohmann::json& p = inst[k];
        std::string where = fmt::format("{}.instances[{}]", at, k);
        if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number())
          fail(where, "expected [M, weight]");
        int64_t value = p[0].get<int64_t>();
        double weight = p[1].get<double>();
        if (value < wo.op.m_min || value > wo.op.m_max)
          fail(where, fmt::format("M = {} is outside the range [{}, {}]", value, wo.op.m_min,
                                  wo.op.m_max));
        if (!(weight > 0) || !std::isfinite(weight))
          fail(where, "the weight must be a positive number");
        wo.op.instances.push_back({value, weight});
      }
    }
    try {
      wo.op.build();
    } catch (const Error& e) {
      fail(at, e.what());
    }
    w.operators.push_back(std::move(wo));
  }
  return w;
}

WorkloadSpec load_workload_spec(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) user_error("{}: cannot open the workload spec file", path);
  std::stringstream s;
  s << f.rdbuf();
  return parse_workload_spec(s.str(), path);
}

}  // namespace dietcode::tune
