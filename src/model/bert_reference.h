// The BERT encoder in float64, plain loops and nothing shared with the compiler: what the
// model runtime is checked against (tests, `dietcode run --check`). The layer formulas of
// model/bert.h; GELU is the exact (erf) one; LayerNorm's variance is the mean squared
// deviation; softmax subtracts the row maximum.
#pragma once

#include <cstdint>
#include <vector>

#include "model/bert.h"
#include "model/safetensors.h"

namespace dietcode::model {

// The first c.layers layers of the encoder in `weights` (checkpoint names) on `input`
// [t, c.hidden]; returns [t, c.hidden]. Throws dietcode::Error for missing weights.
std::vector<double> bert_reference(const Safetensors& weights, const BertConfig& c,
                                   const float* input, int64_t t);

}  // namespace dietcode::model
