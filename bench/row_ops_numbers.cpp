// First numbers of the row operators: BERT-base's elementwise work at sequence length T
// (LayerNorm and add + LayerNorm on T x 768, softmax on 12 x T rows of T, GELU on
// T x 3072) generated from tensor expressions, against oneDNN's primitives
// (layer_normalization, binary add + layer_normalization, softmax, eltwise gelu_erf) in
// the same run, one thread, with the memory roofline (bytes read and written once, at
// the measured bandwidth of the level that holds them). Ours: the best of a few row
// schedules per shape. Results are compared with oneDNN's before timing.
//
//   ./build/bench_row_ops [T ...]        (default: 1 16 64 128)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <dnnl.hpp>
#include <functional>
#include <random>
#include <vector>

#include "benchmark/roofline.h"
#include "codegen/llvm/target.h"
#include "ops/row_ops.h"
#include "runtime/kernel.h"
#include "runtime/thread_pool.h"

using namespace dietcode;
using dnnl::memory;

namespace {

double seconds_per_call(const std::function<void()>& f) {
  f();
  std::vector<double> rounds;
  for (int r = 0; r < 5; ++r) {
    int calls = 0;
    auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    do {
      f();
      ++calls;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (elapsed < 0.02);
    rounds.push_back(elapsed / calls);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[2];
}

struct Problem {
  const char* name;
  te::Operator op;
  std::vector<int64_t> shape;
  // oneDNN's computation of the same output from the same buffers (inputs in op order).
  std::function<std::function<void()>(dnnl::engine&, dnnl::stream&,
                                      std::vector<std::vector<float>>&, std::vector<float>&)>
      onednn;
};

memory::desc md(std::vector<int64_t> dims) {
  memory::dims d(dims.begin(), dims.end());
  return memory::desc(d, memory::data_type::f32,
                      dims.size() == 1 ? memory::format_tag::a : memory::format_tag::ab);
}

std::function<void()> layer_norm_dnnl(dnnl::engine& eng, dnnl::stream& s, float* x, float* gamma,
                                      float* beta, float* y, int64_t rows, int64_t n) {
  auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  dnnl::layer_normalization_forward::desc d(dnnl::prop_kind::forward_inference, md({rows, n}),
                                            1e-5f, flags);
  dnnl::layer_normalization_forward::primitive_desc pd(d, eng);
  auto prim = std::make_shared<dnnl::layer_normalization_forward>(pd);
  auto args = std::make_shared<std::unordered_map<int, memory>>(
      std::unordered_map<int, memory>{{DNNL_ARG_SRC, memory(md({rows, n}), eng, x)},
                                      {DNNL_ARG_DST, memory(md({rows, n}), eng, y)},
                                      {DNNL_ARG_SCALE, memory(md({n}), eng, gamma)},
                                      {DNNL_ARG_SHIFT, memory(md({n}), eng, beta)},
                                      {DNNL_ARG_MEAN, memory(pd.mean_desc(), eng)},
                                      {DNNL_ARG_VARIANCE, memory(pd.variance_desc(), eng)}});
  return [prim, args, &s] {
    prim->execute(s, *args);
    s.wait();
  };
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> ts;
  for (int i = 1; i < argc; ++i) ts.push_back(std::atoll(argv[i]));
  if (ts.empty()) ts = {1, 16, 64, 128};
  omp_set_num_threads(1);
  runtime::ThreadPool::global().set_num_threads(1);
  const schedule::Isa isa = codegen::host_target().isa;
  bench::Roofline roof = bench::measure_roofline(1, isa);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  using ops::kM;

  std::vector<Problem> problems;
  problems.push_back({"layer_norm Tx768", ops::layer_norm(1, 128, 768), {}, nullptr});
  problems.back().onednn = [](dnnl::engine& e, dnnl::stream& s, auto& in, auto& out) {
    return layer_norm_dnnl(e, s, in[0].data(), in[1].data(), in[2].data(), out.data(),
                           int64_t(in[0].size() / 768), 768);
  };
  problems.push_back({"add_layer_norm Tx768", ops::add_layer_norm(1, 128, 768), {}, nullptr});
  problems.back().onednn = [](dnnl::engine& e, dnnl::stream& s, auto& in, auto& out) {
    int64_t rows = int64_t(in[0].size() / 768);
    auto sum = std::make_shared<std::vector<float>>(in[0].size());
    dnnl::binary::desc d(dnnl::algorithm::binary_add, md({rows, 768}), md({rows, 768}),
                         md({rows, 768}));
    auto add = std::make_shared<dnnl::binary>(dnnl::binary::primitive_desc(d, e));
    auto args = std::make_shared<std::unordered_map<int, memory>>(
        std::unordered_map<int, memory>{{DNNL_ARG_SRC_0, memory(md({rows, 768}), e, in[0].data())},
                                        {DNNL_ARG_SRC_1, memory(md({rows, 768}), e, in[1].data())},
                                        {DNNL_ARG_DST, memory(md({rows, 768}), e, sum->data())}});
    auto ln = layer_norm_dnnl(e, s, sum->data(), in[2].data(), in[3].data(), out.data(), rows, 768);
    return std::function<void()>([add, args, sum, ln, &s] {
      add->execute(s, *args);
      ln();
    });
  };
  problems.push_back({"softmax 12xTxT", ops::softmax(1, 128, {12, kM, kM}), {}, nullptr});
  problems.back().onednn = [](dnnl::engine& e, dnnl::stream& s, auto& in, auto& out) {
    int64_t t = int64_t(std::llround(std::sqrt(double(in[0].size()) / 12)));
    dnnl::softmax_forward::desc d(dnnl::prop_kind::forward_inference, md({12 * t, t}), 1);
    auto prim =
        std::make_shared<dnnl::softmax_forward>(dnnl::softmax_forward::primitive_desc(d, e));
    auto args = std::make_shared<std::unordered_map<int, memory>>(
        std::unordered_map<int, memory>{{DNNL_ARG_SRC, memory(md({12 * t, t}), e, in[0].data())},
                                        {DNNL_ARG_DST, memory(md({12 * t, t}), e, out.data())}});
    return std::function<void()>([prim, args, &s] {
      prim->execute(s, *args);
      s.wait();
    });
  };
  problems.push_back({"gelu Tx3072", ops::gelu(1, 128, {kM, 3072}), {}, nullptr});
  problems.back().onednn = [](dnnl::engine& e, dnnl::stream& s, auto& in, auto& out) {
    int64_t rows = int64_t(in[0].size() / 3072);
    dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference,
                                  dnnl::algorithm::eltwise_gelu_erf, md({rows, 3072}), 0.f, 0.f);
    auto prim =
        std::make_shared<dnnl::eltwise_forward>(dnnl::eltwise_forward::primitive_desc(d, e));
    auto args = std::make_shared<std::unordered_map<int, memory>>(
        std::unordered_map<int, memory>{{DNNL_ARG_SRC, memory(md({rows, 3072}), e, in[0].data())},
                                        {DNNL_ARG_DST, memory(md({rows, 3072}), e, out.data())}});
    return std::function<void()>([prim, args, &s] {
      prim->execute(s, *args);
      s.wait();
    });
  };

  std::vector<schedule::RowSchedule> grid;
  for (int64_t unroll : {1, 2, 4})
    for (auto passes : {schedule::ReductionPasses::Fused}) {
      schedule::RowSchedule s;
      s.isa = isa;
      s.unroll = unroll;
      s.rows_per_task = 4;
      s.parallel = false;
      s.passes = passes;
      grid.push_back(s);
    }

  std::printf(
      "%s\none thread; times in microseconds; ratio = oneDNN time / ours; roofline = "
      "memory-bound time / ours\n\n",
      roof.describe().c_str());
  std::printf("%-22s %5s %10s %10s %7s %9s %9s\n", "operator", "T", "dietcode", "oneDNN", "ratio",
              "roofline", "max diff");
  std::mt19937_64 rng(1);
  for (Problem& p : problems) {
    std::vector<runtime::Kernel> kernels;
    for (const auto& s : grid) kernels.push_back(runtime::Kernel::compile(p.op, s));
    for (int64_t t : ts) {
      std::vector<int64_t> sizes = p.op.buffer_sizes(p.op.bind({t}));
      std::vector<std::vector<float>> in;
      std::vector<runtime::ConstTensor> args;
      double bytes = 0;
      for (size_t i = 0; i + 1 < sizes.size(); ++i) {
        in.emplace_back(sizes[i]);
        for (float& v : in.back()) v = std::normal_distribution<float>(0.f, 1.f)(rng);
        args.push_back({in.back().data(), sizes[i]});
        bytes += 4.0 * double(sizes[i]);
      }
      for (size_t i = 0; i < in.size(); ++i) args[i].data = in[i].data();
      bytes += 4.0 * double(sizes.back());
      std::vector<float> ours(sizes.back(), NAN), theirs(sizes.back(), NAN);
      auto dnnl_run = p.onednn(eng, strm, in, theirs);
      double best = 1e30;
      for (const runtime::Kernel& k : kernels) {
        auto run = [&] { k.run({t}, args, {ours.data(), sizes.back()}); };
        best = std::min(best, seconds_per_call(run));
      }
      double dnnl_time = seconds_per_call(dnnl_run);
      double diff = 0;
      for (size_t i = 0; i < ours.size(); ++i)
        diff = std::max(diff, double(std::abs(ours[i] - theirs[i])));
      double floor = bytes / (roof.level_for(bytes).gbps * 1e9);
      std::printf("%-22s %5lld %10.2f %10.2f %7.2f %8.0f%% %9.1e\n", p.name, (long long)t,
                  best * 1e6, dnnl_time * 1e6, dnnl_time / best, 100 * floor / best, diff);
    }
  }
  return 0;
}
