// Safetensors weight files (model::Safetensors::open: the header length, the JSON header,
// each tensor's dtype, shape and byte range). The bytes are written to a file and opened
// as a model's weights are. Every tensor of an accepted file must lie inside the mapping
// (each of its values is read) and be returned again by name with its own shape.
#include <cstdint>
#include <optional>

#include "fuzz/fuzz_support.h"
#include "model/safetensors.h"
#include "support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static dietcode::fuzz::ScratchFile file;
  std::optional<dietcode::model::Safetensors> f;
  try {
    f = dietcode::model::Safetensors::open(file.write(data, size));
  } catch (const dietcode::Error&) {
    return 0;
  }
  for (const auto& entry : f->tensors()) {
    const dietcode::model::TensorInfo& info = entry.second;
    volatile float sum = 0;
    for (int64_t i = 0; i < info.elements(); ++i) sum = sum + info.data[i];
    const float* again = dietcode::fuzz::must([&] { return f->tensor(entry.first, info.shape); },
                                              "tensor(name, its own shape)");
    FUZZ_CHECK(again == info.data, "a tensor read by name moved");
  }
  return 0;
}
