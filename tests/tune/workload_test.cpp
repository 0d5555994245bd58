// Workload presets and spec files: valid specs load; every mistake is reported with the
// file, the line and the field.
#include "tune/workload.h"

#include <gtest/gtest.h>

#include "test_support.h"

namespace dietcode::tune {
namespace {

const char* kGood = R"({
  "name": "encoder",
  "operators": [
    {"name": "qkv", "op": "dense", "N": 2304, "K": 768, "M": [1, 128],
     "instances": [[1, 4.0], [64, 1.5], [128, 1]]},
    {"name": "ffn1", "op": "dense", "N": 3072, "K": 768, "M": [1, 128],
     "epilogue": "bias_gelu"},
    {"name": "scores", "op": "batch_matmul", "batch": 12, "N": 64, "K": 64,
     "M": [1, 128], "layout": "NT"}
  ]
})";

TEST(WorkloadSpec, LoadsAValidSpec) {
  WorkloadSpec w = parse_workload_spec(kGood, "w.json");
  EXPECT_EQ(w.name, "encoder");
  ASSERT_EQ(w.operators.size(), 3u);
  EXPECT_EQ(w.operators[0].op.instances.size(), 3u);
  EXPECT_EQ(w.operators[0].op.declared_shapes(),
            (std::vector<std::vector<int64_t>>{{1}, {64}, {128}}));
  EXPECT_EQ(w.operators[1].op.epilogue, "bias_gelu");
  EXPECT_EQ(w.operators[2].op.batch, 12);
  for (const auto& o : w.operators) EXPECT_NO_THROW(o.op.build());
}

TEST(WorkloadSpec, AttentionRowOperatorsAndTOnBothSides) {
  WorkloadSpec w = parse_workload_spec(R"({
  "name": "layer",
  "operators": [
    {"name": "scores", "op": "batch_matmul", "batch": 12, "N": "M", "K": 64, "M": [1, 128]},
    {"name": "context", "op": "batch_matmul", "batch": 12, "N": 64, "K": "M", "M": [1, 128],
     "layout": "NN"},
    {"name": "attention", "op": "attention", "N": 12, "K": 64, "M": [1, 128], "mask": true},
    {"name": "ln", "op": "add_layer_norm", "N": 768, "M": [1, 128]}
  ]
})",
                                       "w.json");
  ASSERT_EQ(w.operators.size(), 4u);
  EXPECT_TRUE(w.operators[0].op.n_is_m);
  EXPECT_FALSE(w.operators[0].op.k_is_m);
  EXPECT_TRUE(w.operators[1].op.k_is_m);
  EXPECT_TRUE(w.operators[2].op.mask);
  EXPECT_EQ(w.operators[3].op.n, 768);
  for (const auto& o : w.operators) EXPECT_NO_THROW(o.op.build());
  EXPECT_USER_ERROR(parse_workload_spec(R"({"name": "x", "operators": [
    {"name": "a", "op": "dense", "N": "M", "K": 64, "M": [1, 8]}]})",
                                        "w.json"),
                    "only batch_matmul takes N or K = M");
}

TEST(WorkloadSpec, Presets) {
  WorkloadSpec w = preset_workload("bert-base-dense");
  ASSERT_EQ(w.operators.size(), 4u);
  EXPECT_EQ(w.operators[3].op.n, 768);
  EXPECT_EQ(w.operators[3].op.k, 3072);
  EXPECT_USER_ERROR(preset_workload("bert-huge"),
                    "unknown preset workload 'bert-huge'; expected one of: bert-base-dense");
}

std::string with(const std::string& from, const std::string& to) {
  std::string s = kGood;
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(WorkloadSpec, SyntaxErrorsNameLineAndColumn) {
  EXPECT_USER_ERROR(parse_workload_spec(with("\"K\": 768, \"M\": [1, 128],\n     \"instances\"",
                                             "\"K\": 768 \"M\": [1, 128],\n     \"instances\""),
                                        "w.json"),
                    "w.json:4:");
  EXPECT_USER_ERROR(parse_workload_spec("", "e.json"), "e.json:1:1: JSON syntax error");
  EXPECT_USER_ERROR(parse_workload_spec(std::string(kGood).substr(0, 100), "t.json"), "t.json:");
}

TEST(WorkloadSpec, SemanticErrorsNameLineAndField) {
  EXPECT_USER_ERROR(parse_workload_spec(with("\"N\": 3072", "\"N\": -3"), "w.json"),
                    "w.json:6: operators[1].N: expected a positive integer");
  EXPECT_USER_ERROR(
      parse_workload_spec(with("\"op\": \"batch_matmul\"", "\"op\": \"conv\""), "w.json"),
      "w.json:8: operators[2].op: expected \"op\": dense, batch_matmul, attention or a row "
      "operator");
  EXPECT_USER_ERROR(parse_workload_spec(with("[64, 1.5]", "[200, 1.5]"), "w.json"),
                    "w.json:5: operators[0].instances[1]: M = 200 is outside the range [1, 128]");
  EXPECT_USER_ERROR(
      parse_workload_spec(with("\"epilogue\": \"bias_gelu\"", "\"epilogue\": \"swish\""), "w.json"),
      "operators[1]: unknown epilogue 'swish'");
  EXPECT_USER_ERROR(parse_workload_spec(with("\"name\": \"ffn1\"", "\"name\": \"qkv\""), "w.json"),
                    "w.json:6: operators[1].name: 'qkv' is used twice");
  EXPECT_USER_ERROR(parse_workload_spec(with("\"layout\": \"NT\"", "\"layuot\": \"NT\""), "w.json"),
                    "w.json:9: operators[2].layuot: unknown field");
  EXPECT_USER_ERROR(parse_workload_spec(with("\"M\": [1, 128],\n     \"epilogue\"",
                                             "\"M\": [9, 3],\n     \"epilogue\""),
                                        "w.json"),
                    "w.json:6: operators[1].M: expected [lo, hi]");
  EXPECT_USER_ERROR(parse_workload_spec(R"({"name": "x", "operators": []})", "w.json"),
                    "w.json:1: operators: expected a non-empty array");
  EXPECT_USER_ERROR(parse_workload_spec("[1, 2]", "w.json"), "expected a JSON object");
}

}  // namespace
}  // namespace dietcode::tune

namespace dietcode::tune {
namespace {

TEST(WorkloadSpec, ColdWeightsFlag) {
  EXPECT_TRUE(preset_workload("bert-base").cold_weights);  // a model: weights from DRAM
  EXPECT_FALSE(preset_workload("bert-base-dense").cold_weights);
  const char* spec = R"({"name": "m", "cold_weights": true, "operators": [
    {"name": "qkv", "op": "dense", "N": 96, "K": 32, "M": [1, 16]}]})";
  EXPECT_TRUE(parse_workload_spec(spec, "m.json").cold_weights);
  EXPECT_USER_ERROR(parse_workload_spec(R"({"name": "m", "cold_weights": 1, "operators": [
    {"name": "qkv", "op": "dense", "N": 96, "K": 32, "M": [1, 16]}]})",
                                        "m.json"),
                    "cold_weights");
}

}  // namespace
}  // namespace dietcode::tune
