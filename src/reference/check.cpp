#include "reference/check.h"

#include <limits>

#include "reference/reference.h"

namespace dietcode::reference {

CheckCase make_check_case(const te::Operator& op, const std::vector<int64_t>& shape,
                          std::mt19937_64& rng) {
  CheckCase c;
  c.shape = shape;
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<int64_t> sizes = op.buffer_sizes(op.bind(shape));
  std::vector<const float*> pointers;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    c.inputs.emplace_back(sizes[i]);
    for (int64_t j = 0; j < sizes[i]; ++j) c.inputs.back()[j] = dist(rng);
    pointers.push_back(c.inputs.back().data());
  }
  c.expected = evaluate(op, shape, pointers);
  return c;
}

double run_check_case(const runtime::Kernel& kernel, const CheckCase& c) {
  std::vector<runtime::ConstTensor> args;
  runtime::AlignedBuffer packed;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (kernel.needs_prepack() && static_cast<int>(i) == kernel.prepacked_input()) {
      packed = kernel.prepack(c.shape, {c.inputs[i].data(), c.inputs[i].size()});
      args.push_back({packed.data(), packed.size()});
    } else {
      args.push_back({c.inputs[i].data(), c.inputs[i].size()});
    }
  }
  runtime::AlignedBuffer out(static_cast<int64_t>(c.expected.size()));
  for (int64_t i = 0; i < out.size(); ++i) out[i] = std::numeric_limits<float>::quiet_NaN();
  kernel.run(c.shape, args, {out.data(), out.size()});
  return relative_error(out.data(), c.expected);
}

}  // namespace dietcode::reference
