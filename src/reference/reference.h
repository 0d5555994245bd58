// The oracle: an operator's compute definition evaluated directly from its tensor
// expression, element by element, in float64. No schedule, no packing, no JIT.
#pragma once

#include <vector>

#include "te/tensor.h"

namespace dietcode::reference {

// inputs: one pointer per operator input, in order. Returns the output, row-major.
std::vector<double> evaluate(const te::Operator& op, const std::vector<int64_t>& shape,
                             const std::vector<const float*>& inputs);

// ||got - want||_F / max(||want||_F, tiny). NaN if any value of `got` is not finite.
double relative_error(const float* got, const std::vector<double>& want);

}  // namespace dietcode::reference
