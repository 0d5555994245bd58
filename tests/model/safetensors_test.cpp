// Model weights in safetensors files: written and read back; every malformed file refused
// with a message naming the file and the fault; the BERT names and the seeded generator.
#include "model/safetensors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "test_support.h"

using namespace dietcode;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("dietcode_st_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// A file of `header` (JSON text) and `data_bytes` zero bytes of data.
std::string raw_file(const std::string& name, const std::string& header, size_t data_bytes,
                     int64_t claimed_length = -1) {
  std::string path = temp_path(name);
  std::ofstream out(path, std::ios::binary);
  uint64_t len = claimed_length >= 0 ? uint64_t(claimed_length) : header.size();
  for (int i = 0; i < 8; ++i) out.put(char(len >> (8 * i)));
  out << header << std::string(data_bytes, '\0');
  return path;
}

}  // namespace

TEST(Safetensors, WrittenTensorsReadBackExactly) {
  std::string path = temp_path("roundtrip.safetensors");
  model::NamedTensor a{"a.weight", {2, 3}, {1, 2, 3, 4, 5, 6}};
  model::NamedTensor b{"b.bias", {3}, {-1.5f, 0.25f, 1e-30f}};
  model::NamedTensor empty{"empty", {0, 4}, {}};
  model::write_safetensors(path, {a, b, empty});
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  model::Safetensors f = model::Safetensors::open(path);
  EXPECT_EQ(f.tensors().size(), 3u);
  const float* pa = f.tensor("a.weight", {2, 3});
  const float* pb = f.tensor("b.bias", {3});
  for (int i = 0; i < 6; ++i) EXPECT_EQ(pa[i], a.data[i]);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(pb[i], b.data[i]);
  EXPECT_USER_ERROR(f.tensor("a.weight", {3, 2}),
                    "tensor 'a.weight' has shape [2, 3], expected [3, 2]");
  EXPECT_USER_ERROR(f.tensor("c", {1}), "no tensor 'c' (expected shape [1]");
  std::filesystem::remove(path);
}

TEST(Safetensors, MalformedFilesAreRefusedNamingTheFault) {
  struct Case {
    std::string header;
    size_t data;
    int64_t claimed;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"{}", 0, 1000, "header length 1000 runs past the end"},
      {"[1, 2]", 0, -1, "the header is not a JSON object"},
      {"{not json", 0, -1, "the header is not a JSON object"},
      {R"({"x": {"shape": [1], "data_offsets": [0, 4]}})", 4, -1, "tensor 'x': no dtype"},
      {R"({"x": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}})", 4, -1,
       "dtype F16; only F32 is read"},
      {R"({"x": {"dtype": "F32", "data_offsets": [0, 4]}})", 4, -1, "tensor 'x': no shape"},
      {R"({"x": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4, -1,
       "not a non-negative integer"},
      {R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0]}})", 8, -1, "no data_offsets"},
      {R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 16]}})", 8, -1,
       "outside the 8 bytes of data"},
      {R"({"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8, -1,
       "hold 8 bytes, shape [3] needs 12"},
      {R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
           "y": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
       12, -1, "tensors 'x' and 'y' overlap"},
      {R"({"big": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
           "e": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]},
           "z": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
       16, -1, "tensors 'big' and 'z' overlap"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    // Headers padded to a multiple of 8 keep the data aligned, as writers do.
    std::string header = c.header;
    while ((8 + header.size()) % 8) header += ' ';
    std::string path = raw_file("bad" + std::to_string(i), header, c.data, c.claimed);
    SCOPED_TRACE(c.header);
    EXPECT_USER_ERROR(model::Safetensors::open(path), c.error);
    std::filesystem::remove(path);
  }
  std::string tiny = raw_file("tiny", "", 0, 0);
  std::filesystem::resize_file(tiny, 3);
  EXPECT_USER_ERROR(model::Safetensors::open(tiny), "too short for a safetensors file");
  std::filesystem::remove(tiny);
  EXPECT_USER_ERROR(model::Safetensors::open(temp_path("missing")), "cannot open");
}

TEST(Safetensors, RandomBertWeightsHaveTheCheckpointNamesAndAreReproducible) {
  model::BertShape s{2, 64, 4, 128};
  auto shapes = model::bert_tensor_shapes(s);
  EXPECT_EQ(shapes.size(), 2u * 16);
  std::string p1 = temp_path("bert1.safetensors"), p2 = temp_path("bert2.safetensors");
  model::write_random_bert_weights(p1, s, 7);
  model::write_random_bert_weights(p2, s, 7);
  model::Safetensors f1 = model::Safetensors::open(p1), f2 = model::Safetensors::open(p2);
  const float* q = f1.tensor("encoder.layer.1.attention.self.query.weight", {64, 64});
  const float* q2 = f2.tensor("encoder.layer.1.attention.self.query.weight", {64, 64});
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < 64 * 64; ++i) {
    EXPECT_EQ(q[i], q2[i]);
    sum += q[i];
    sum_sq += double(q[i]) * q[i];
  }
  const double mean = sum / 4096, sd = std::sqrt(sum_sq / 4096 - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.002);
  EXPECT_NEAR(sd, 0.02, 0.002);
  const float* gamma = f1.tensor("encoder.layer.0.output.LayerNorm.weight", {64});
  const float* bias = f1.tensor("encoder.layer.0.intermediate.dense.bias", {128});
  EXPECT_EQ(gamma[5], 1.0f);
  EXPECT_EQ(bias[5], 0.0f);
  f1.tensor("encoder.layer.0.output.dense.weight", {64, 128});
  model::write_random_bert_weights(p2, s, 8);
  model::Safetensors f3 = model::Safetensors::open(p2);
  EXPECT_NE(f3.tensor("encoder.layer.1.attention.self.query.weight", {64, 64})[0], q[0]);
  EXPECT_USER_ERROR(model::bert_tensor_shapes({1, 64, 5, 128}), "hidden a multiple of heads");
  std::filesystem::remove(p1);
  std::filesystem::remove(p2);
}
