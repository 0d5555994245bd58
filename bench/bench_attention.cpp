// Fused attention (one generated kernel, ops/attention.h) against the composition a
// framework runs without fusion: Q K^T as one batched sgemm, the scale, a softmax over
// rows, then P V as a second batched sgemm. Two compositions are timed and the faster
// kept: oneDNN's batched matmul (scale as an output scale) + oneDNN's softmax primitive
// + oneDNN's batched matmul, and OpenBLAS cblas_sgemm per head + the same softmax + sgemm
// per head. BERT-base: 12 heads of 64, batch 1, no mask, one thread. Ours: the best of a
// small grid of attention schedules per T. Every result is compared with float64
// (sampled rows) before it is timed. Also: the JIT compile time of one fused kernel.
//
//   ./build/bench_attention [T ...]        (default: 1 5 16 37 64 100 128)
#include <cblas.h>
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

#include "codegen/llvm/target.h"
#include "ops/attention.h"
#include "reference/reference.h"
#include "runtime/kernel.h"
#include "runtime/thread_pool.h"
#include "support/error.h"

using namespace dietcode;
using dnnl::memory;

namespace {

constexpr int64_t kHeads = 12, kHeadDim = 64;

// The fastest of 7 rounds of >= 20 ms each: the machine may be shared, and interference
// only ever adds time.
double seconds_per_call(const std::function<void()>& f) {
  f();
  std::vector<double> rounds;
  for (int r = 0; r < 7; ++r) {
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
  return *std::min_element(rounds.begin(), rounds.end());
}

memory::desc md(const memory::dims& dims, memory::format_tag tag) {
  return memory::desc(dims, memory::data_type::f32, tag);
}

// Q, K, V, O: [12, T, 64]; scores: [12, T, T] scratch.
struct Buffers {
  std::vector<float> q, k, v, scores, out;
};

std::function<void()> onednn_composition(dnnl::engine& eng, dnnl::stream& s, Buffers& b,
                                         int64_t t) {
  const float scale = 1.0f / std::sqrt(float(kHeadDim));
  using tag = memory::format_tag;
  memory::desc q_md = md({kHeads, t, kHeadDim}, tag::abc);
  memory::desc kt_md = md({kHeads, kHeadDim, t}, tag::acb);  // K^T: K as stored
  memory::desc s_md = md({kHeads, t, t}, tag::abc);
  dnnl::primitive_attr attr;
  attr.set_output_scales(0, {scale});
  dnnl::matmul::primitive_desc qk_pd(dnnl::matmul::desc(q_md, kt_md, s_md), attr, eng);
  dnnl::softmax_forward::desc sm_d(dnnl::prop_kind::forward_inference, md({kHeads * t, t}, tag::ab),
                                   1);
  dnnl::softmax_forward::primitive_desc sm_pd(sm_d, eng);
  dnnl::matmul::primitive_desc sv_pd(dnnl::matmul::desc(s_md, q_md, q_md), eng);
  auto qk = std::make_shared<dnnl::matmul>(qk_pd);
  auto sm = std::make_shared<dnnl::softmax_forward>(sm_pd);
  auto sv = std::make_shared<dnnl::matmul>(sv_pd);
  using Args = std::unordered_map<int, memory>;
  auto qk_args = std::make_shared<Args>(Args{{DNNL_ARG_SRC, memory(q_md, eng, b.q.data())},
                                             {DNNL_ARG_WEIGHTS, memory(kt_md, eng, b.k.data())},
                                             {DNNL_ARG_DST, memory(s_md, eng, b.scores.data())}});
  memory rows(md({kHeads * t, t}, tag::ab), eng, b.scores.data());
  auto sm_args = std::make_shared<Args>(Args{{DNNL_ARG_SRC, rows}, {DNNL_ARG_DST, rows}});
  auto sv_args = std::make_shared<Args>(Args{{DNNL_ARG_SRC, memory(s_md, eng, b.scores.data())},
                                             {DNNL_ARG_WEIGHTS, memory(q_md, eng, b.v.data())},
                                             {DNNL_ARG_DST, memory(q_md, eng, b.out.data())}});
  return [=, &s] {
    qk->execute(s, *qk_args);
    sm->execute(s, *sm_args);
    sv->execute(s, *sv_args);
    s.wait();
  };
}

std::function<void()> openblas_composition(dnnl::engine& eng, dnnl::stream& s, Buffers& b,
                                           int64_t t) {
  const float scale = 1.0f / std::sqrt(float(kHeadDim));
  memory::desc rows_md = md({kHeads * t, t}, memory::format_tag::ab);
  dnnl::softmax_forward::desc sm_d(dnnl::prop_kind::forward_inference, rows_md, 1);
  auto sm =
      std::make_shared<dnnl::softmax_forward>(dnnl::softmax_forward::primitive_desc(sm_d, eng));
  memory rows(rows_md, eng, b.scores.data());
  auto sm_args = std::make_shared<std::unordered_map<int, memory>>(
      std::unordered_map<int, memory>{{DNNL_ARG_SRC, rows}, {DNNL_ARG_DST, rows}});
  return [=, &b, &s] {
    const int n = int(t), d = int(kHeadDim);
    for (int64_t h = 0; h < kHeads; ++h)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, d, scale, b.q.data() + h * n * d,
                  d, b.k.data() + h * n * d, d, 0.0f, b.scores.data() + h * n * n, n);
    sm->execute(s, *sm_args);
    s.wait();
    for (int64_t h = 0; h < kHeads; ++h)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, d, n, 1.0f,
                  b.scores.data() + h * n * n, n, b.v.data() + h * n * d, d, 0.0f,
                  b.out.data() + h * n * d, d);
  };
}

// Largest relative error of `got` on a sample of rows, against float64.
double sampled_error(const te::Operator& op, const Buffers& b, int64_t t) {
  std::vector<int64_t> at;
  for (int64_t h : {int64_t(0), kHeads - 1})
    for (int64_t i : {int64_t(0), t / 2, t - 1})
      for (int64_t d = 0; d < kHeadDim; ++d) at.push_back((h * t + i) * kHeadDim + d);
  std::vector<double> want =
      reference::evaluate_at(op, {t}, {b.q.data(), b.k.data(), b.v.data()}, at);
  double diff = 0, norm = 0;
  for (size_t e = 0; e < at.size(); ++e) {
    if (!std::isfinite(b.out[at[e]])) return INFINITY;
    diff += (b.out[at[e]] - want[e]) * (b.out[at[e]] - want[e]);
    norm += want[e] * want[e];
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> ts;
  for (int i = 1; i < argc; ++i) ts.push_back(std::atoll(argv[i]));
  if (ts.empty()) ts = {1, 5, 16, 37, 64, 100, 128};
  omp_set_num_threads(1);
  openblas_set_num_threads(1);
  runtime::ThreadPool::global().set_num_threads(1);
  const schedule::Isa isa = codegen::host_target().isa;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  te::Operator op =
      ops::attention(1, 512, kHeads, ops::attention_shapes(1, kHeads, kHeadDim, false));

  // JIT compile time of one fused kernel (lower + LLVM + machine code), median of 10.
  schedule::AttentionSchedule base;
  base.isa = isa;
  base.parallel = schedule::AttentionParallel::None;
  std::vector<double> compile;
  for (int i = 0; i < 10; ++i)
    compile.push_back(runtime::Kernel::compile(op, base).compile_seconds());
  std::sort(compile.begin(), compile.end());
  std::printf(
      "JIT compile of one fused attention kernel: median %.1f ms (min %.1f, max %.1f) over 10\n\n",
      1e3 * (compile[4] + compile[5]) / 2, 1e3 * compile.front(), 1e3 * compile.back());

  std::vector<schedule::AttentionSchedule> grid;
  for (int64_t tile : {8, 16, 24, 32})
    for (int64_t block : {16, 32, 64, 128})
      for (int64_t unroll : {2, 4, 8}) {
        schedule::AttentionSchedule s = base;
        s.query_tile = tile;
        s.key_block = block;
        s.unroll = unroll;
        try {
          schedule::validate(s);
        } catch (const Error&) {
          continue;
        }
        grid.push_back(s);
      }
  std::vector<runtime::Kernel> kernels;
  for (const auto& s : grid) kernels.push_back(runtime::Kernel::compile(op, s));

  std::printf(
      "attention, %lld heads of %lld, batch 1, no mask, one thread; times in microseconds;\n"
      "ratio = composition / fused (composition: the faster of oneDNN matmul + softmax + "
      "matmul and OpenBLAS sgemm per head + oneDNN softmax + sgemm per head)\n\n",
      (long long)kHeads, (long long)kHeadDim);
  std::printf("%5s %10s %10s %10s %7s %9s %9s  %s\n", "T", "fused", "oneDNN", "OpenBLAS", "ratio",
              "err ours", "err comp", "best schedule");
  std::mt19937_64 rng(1);
  double log_sum = 0;
  for (int64_t t : ts) {
    Buffers b;
    int64_t n = kHeads * t * kHeadDim;
    for (auto* v : {&b.q, &b.k, &b.v}) {
      v->resize(n);
      for (float& x : *v) x = std::normal_distribution<float>(0.f, 1.f)(rng);
    }
    b.scores.assign(kHeads * t * t, NAN);
    std::vector<runtime::ConstTensor> args{{b.q.data(), n}, {b.k.data(), n}, {b.v.data(), n}};
    double best = 1e30;
    size_t best_i = 0;
    for (size_t i = 0; i < kernels.size(); ++i) {
      b.out.assign(n, NAN);
      kernels[i].run({t}, args, {b.out.data(), n});
      if (sampled_error(op, b, t) > 1e-5) {
        std::printf("T=%lld: schedule %s is wrong; skipped\n", (long long)t,
                    to_json_text(grid[i]).c_str());
        continue;
      }
      double secs = seconds_per_call([&] { kernels[i].run({t}, args, {b.out.data(), n}); });
      if (secs < best) best = secs, best_i = i;
    }
    b.out.assign(n, NAN);
    kernels[best_i].run({t}, args, {b.out.data(), n});
    double err_ours = sampled_error(op, b, t);
    double comp_err = 0, comp[2];
    int which = 0;
    for (auto make : {onednn_composition, openblas_composition}) {
      b.out.assign(n, NAN);
      auto run = make(eng, strm, b, t);
      run();
      comp_err = std::max(comp_err, sampled_error(op, b, t));
      comp[which++] = seconds_per_call(run);
    }
    double composition = std::min(comp[0], comp[1]);
    log_sum += std::log(composition / best);
    std::printf("%5lld %10.2f %10.2f %10.2f %7.2f %9.1e %9.1e  %s\n", (long long)t, best * 1e6,
                comp[0] * 1e6, comp[1] * 1e6, composition / best, err_ours, comp_err,
                to_json_text(grid[best_i]).c_str());
  }
  std::printf("\ngeomean ratio (composition / fused): %.2f\n",
              std::exp(log_sum / double(ts.size())));
  return 0;
}
