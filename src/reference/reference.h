// The oracle: an operator's compute definition evaluated directly from its tensor
// expression, element by element, in float64. No schedule, no packing, no JIT.
#pragma once

#include <vector>

#include "te/tensor.h"

namespace dietcode::reference {

// inputs: one pointer per operator input, in order. Returns the output, row-major.
std::vector<double> evaluate(const te::Operator& op, const std::vector<int64_t>& shape,
                             const std::vector<const float*>& inputs);

// Only the output elements at the given flat (row-major) indices, in that order: a
// cheap check of large outputs (the rest is checked for being written at all).
std::vector<double> evaluate_at(const te::Operator& op, const std::vector<int64_t>& shape,
                                const std::vector<const float*>& inputs,
                                const std::vector<int64_t>& flat_indices);

// ||got - want||_F / max(||want||_F, tiny). NaN if any value of `got` is not finite.
double relative_error(const float* got, const std::vector<double>& want);

}  // namespace dietcode::reference
