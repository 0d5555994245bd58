// Model weights in the safetensors format (the format of the usual BERT checkpoints):
// an 8-byte little-endian header length, a JSON header naming each tensor's dtype, shape
// and byte range, then the raw data. Float32 tensors only; a file is mapped read-only
// and its tensors are views into the mapping (BERT-base's twelve layers are ~340 MB).
//
//   model::Safetensors w = model::Safetensors::open("bert.safetensors");
//   const float* q = w.tensor("encoder.layer.0.attention.self.query.weight", {768, 768});
//
// Every malformed file is refused with a dietcode::Error naming the file and what is
// wrong: a header length past the end, invalid JSON, an entry without dtype, shape or
// offsets, a dtype other than F32, offsets outside the data or not matching the shape,
// overlapping tensors; and a missing tensor or one of another shape where it is read.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dietcode::model {

struct TensorInfo {
  std::vector<int64_t> shape;
  const float* data = nullptr;  // into the file's mapping
  int64_t elements() const;
};

class Safetensors {
 public:
  static Safetensors open(const std::string& path);
  // The tensor's data, checked to have `shape`; throws dietcode::Error naming the
  // tensor, the file and the expected shape otherwise.
  const float* tensor(const std::string& name, const std::vector<int64_t>& shape) const;
  bool contains(const std::string& name) const { return tensors_.count(name) > 0; }
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::string& path() const { return path_; }

 private:
  struct Mapping;
  std::string path_;
  std::shared_ptr<Mapping> mapping_;
  std::map<std::string, TensorInfo> tensors_;
};

// A named float32 tensor to write.
struct NamedTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
};

// Writes `tensors` as a safetensors file (data 8-byte aligned, in the order given),
// through a temporary file renamed into place: a crash leaves no partial file.
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors);

// The BERT encoder's tensor names and shapes, as in the usual checkpoints
// (encoder.layer.N.attention.self.query.weight [hidden, hidden], ...), for `layers`
// layers; and a file of such tensors drawn from a seeded generator (weights normal with
// standard deviation 0.02, biases 0, LayerNorm gamma 1 and beta 0, as BERT initializes
// them), the same bytes for the same arguments wherever the C library's log, sin and cos agree (the
// same Debian release).
struct BertShape {
  int64_t layers = 12, hidden = 768, heads = 12, ffn = 3072;
};
std::vector<std::pair<std::string, std::vector<int64_t>>> bert_tensor_shapes(const BertShape& s);
void write_random_bert_weights(const std::string& path, const BertShape& s, uint64_t seed);

}  // namespace dietcode::model
