// The plugin interface of whole-model peers: engines that run the BERT encoder from the
// same weights as ours (`dietcode bench --workload bert-base-encoder`). A plugin
// (bench/peers/, e.g. libdietcode_model_peer_torch.so) is loaded with dlopen, so the
// engine's library is needed only where the benchmark runs; ONNX Runtime, shipped for
// Node.js, runs as a child process instead (bench/peers/ort/).
//
// The encoder is model/bert.h's: post-LayerNorm BERT layers, GELU exact (erf), attention
// scale 1/sqrt(head size), no mask, one sequence [t, hidden] row-major float32.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dietcode::bench {

struct EncoderConfig {
  int64_t layers = 12, hidden = 768, heads = 12, ffn = 3072;
  double eps = 1e-12;
};

// A weight tensor by its checkpoint name (encoder.layer.N.attention.self.query.weight
// [hidden, hidden], ...: model::bert_tensor_shapes). Valid during load() only.
struct WeightView {
  const float* data = nullptr;
  std::vector<int64_t> shape;
};

class ModelPeer {
 public:
  virtual ~ModelPeer() = default;
  virtual std::string name() const = 0;  // "libtorch", "libtorch-script": an engine column
  virtual std::string version() const = 0;
  virtual void set_threads(int threads) = 0;
  // Takes (copies, converts, lays out) the first c.layers layers' weights; not timed
  // with the forward passes. Throws std::runtime_error naming a missing or wrong tensor.
  virtual void load(const EncoderConfig& c, const std::map<std::string, WeightView>& weights) = 0;
  // output = encoder(input), [t, hidden] each. Throws std::runtime_error on failure.
  virtual void forward(const float* input, int64_t t, float* output) = 0;
};

}  // namespace dietcode::bench

// Each model-peer plugin exports this factory: a new object (owned by the caller) running
// the engine in the form `variant` names ("eager", "script", ...), or nullptr for a variant
// the plugin does not have.
extern "C" dietcode::bench::ModelPeer* dietcode_make_model_peer(const char* variant);
