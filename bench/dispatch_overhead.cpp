// Dispatch overhead: what a tuned module adds to a call, in nanoseconds. The same
// kernel is called at M = 1 directly (Kernel::run with the pre-packed weights) and
// through runtime::Module::run (the compiled decision tree, the pre-packed-weights and
// argument checks, then the same Kernel::run), in alternating blocks; each path's
// figure is its fastest block's time per call.
//
//   bench_dispatch_overhead [module.json]   (default: a synthetic module of 4 kernels
//                                            of a small dense layer, a 7-leaf tree)
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "codegen/llvm/target.h"
#include "runtime/module.h"
#include "tune/select.h"

using namespace dietcode;
using Clock = std::chrono::steady_clock;

namespace {

runtime::ModuleSpec synthetic_module() {
  runtime::ModuleSpec m;
  m.op.op = "dense";
  m.op.n = 32;  // small, so the kernel's own time does not drown the difference
  m.op.k = 32;
  m.op.m_min = 1;
  m.op.m_max = 128;
  m.isa = codegen::host_target().isa;
  int64_t w = schedule::vector_isa(m.isa).width;
  for (int64_t mr : {1, 2, 3, 4}) {
    schedule::MicroKernelSchedule s;
    s.isa = m.isa;
    s.mr = mr;
    s.nr = w;
    s.kc = 32;
    s.mc = mr * 8;
    s.nc = 32;
    s.parallel = schedule::ParallelAxis::None;
    s.pack_b = schedule::PackB::Prepacked;
    m.kernels.push_back(s);
  }
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int> labels;
  for (int64_t M = 1; M <= 128; ++M) {
    shapes.push_back({M});
    labels.push_back(M <= 1 ? 0 : M <= 7 ? 1 : M % 3 == 0 ? 2 : M % 4 == 0 ? 3 : 1);
  }
  m.dispatch = tune::build_dispatch_tree(shapes, labels);
  return m;
}

template <typename F>
double ns_per_call(const F& call, int64_t calls) {
  auto t0 = Clock::now();
  for (int64_t i = 0; i < calls; ++i) call();
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / double(calls);
}

}  // namespace

int main(int argc, char** argv) {
  runtime::ModuleSpec spec = argc > 1 ? runtime::load_module_spec(argv[1]) : synthetic_module();
  runtime::Module module = runtime::Module::compile(spec);
  const std::vector<int64_t> shape = {1};
  const te::Operator& op = module.op();
  std::vector<int64_t> sizes = op.buffer_sizes(op.bind(shape));
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<std::vector<float>> inputs;
  std::vector<runtime::ConstTensor> args;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    inputs.emplace_back(sizes[i]);
    for (float& v : inputs.back()) v = dist(rng);
  }
  for (auto& in : inputs) args.push_back({in.data(), int64_t(in.size())});
  std::vector<float> out(sizes.back());
  runtime::MutableTensor y{out.data(), int64_t(out.size())};
  int weights = op.inputs.size() > 1 ? 1 : 0;
  runtime::PackedWeights packed = module.prepack(shape, args[weights]);
  // The direct call: the kernel M = 1 dispatches to, with its packed weights in place.
  int k = module.select(shape);
  const runtime::Kernel& kernel = module.kernel(k);
  std::vector<runtime::ConstTensor> direct_args = args;
  if (kernel.needs_prepack())
    direct_args[kernel.prepacked_input()] = {packed.per_kernel[k]->data(),
                                             packed.per_kernel[k]->size()};
  auto direct = [&] { kernel.run(shape, direct_args, y); };
  auto dispatched = [&] { module.run(shape, args, y, &packed); };
  int64_t calls = std::max<int64_t>(1000, int64_t(2e6 / std::max(50.0, ns_per_call(direct, 1000))));
  double best_direct = 1e30, best_module = 1e30;
  for (int block = 0; block < 21; ++block) {
    best_direct = std::min(best_direct, ns_per_call(direct, calls));
    best_module = std::min(best_module, ns_per_call(dispatched, calls));
  }
  fmt::print(
      "dispatch overhead at M = 1 ({} kernels, tree depth {}, {} calls per block, best of 21)\n",
      module.num_kernels(), spec.dispatch.depth(), calls);
  fmt::print("  Kernel::run directly     {:8.1f} ns/call\n", best_direct);
  fmt::print("  Module::run (dispatched) {:8.1f} ns/call\n", best_module);
  fmt::print("  difference               {:8.1f} ns/call\n", best_module - best_direct);
}
