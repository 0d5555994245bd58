// Checking a compiled kernel against the reference: fresh random inputs in [-1, 1],
// the output poisoned with NaN before the run (so unwritten elements show), the
// relative Frobenius error of the result. Shared by `dietcode verify`, the tests
// and the benchmarks.
#pragma once

#include <random>
#include <vector>

#include "runtime/buffer.h"
#include "runtime/kernel.h"
#include "te/tensor.h"

namespace dietcode::reference {

struct CheckCase {
  std::vector<int64_t> shape;
  std::vector<runtime::AlignedBuffer> inputs;
  std::vector<double> expected;  // from reference::evaluate
};

CheckCase make_check_case(const te::Operator& op, const std::vector<int64_t>& shape,
                          std::mt19937_64& rng);

// Pre-packs if the kernel wants it, runs on a poisoned output, returns the relative
// error (NaN if any output is not finite).
double run_check_case(const runtime::Kernel& kernel, const CheckCase& c);

}  // namespace dietcode::reference
