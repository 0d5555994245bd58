// The oneDNN peer: the matmul and inner_product primitives (forward inference, f32), with
// constant weights reordered once into the layout the primitive prefers; and the row
// operators: layer_normalization (scale and shift), binary add then layer_normalization,
// softmax, eltwise gelu_erf, and a dense layer's epilogue as one binary add with post-ops
// (bias then gelu_erf; residual then the bias); and a dense layer with that epilogue fused
// into matmul or inner_product (bias argument, gelu_erf or binary add post-op).
#include <omp.h>

#include <dnnl.hpp>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "peer_common.h"

namespace dietcode::bench::peers {
namespace {

using dnnl::memory;
using tag = memory::format_tag;

const char* isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other isa";
  }
}

class OnednnPeer final : public Peer {
 public:
  std::string name() const override { return "onednn"; }
  std::string version() const override {
    const dnnl_version_t* v = dnnl_version();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
           std::to_string(v->patch) + " (" + isa_name(dnnl::get_effective_cpu_isa()) + ", OpenMP)";
  }
  // oneDNN's OpenMP runtime takes its thread count from the calling thread's
  // omp_get_max_threads(), and its primitives split their work when they are created.
  void set_threads(int threads) override {
    threads_ = threads;
    omp_set_num_threads(threads);
  }
  std::string unsupported(const GemmProblem&) const override { return ""; }

  std::string row_unsupported(const RowProblem&) const override { return ""; }

  std::vector<PeerVariant> prepare_row(const RowProblem& p, const std::vector<const float*>& in,
                                       float* out) override {
    if (p.rows < 1 || p.n < 1) throw std::runtime_error("row problem with a non-positive size");
    if (threads_ > 0) omp_set_num_threads(threads_);
    const memory::desc rows{{p.rows, p.n}, memory::data_type::f32, tag::ab};
    auto mem = [&](const memory::desc& d, const float* ptr) {
      return memory(d, engine_, const_cast<float*>(ptr));
    };
    try {
      switch (p.op) {
        case RowOpKind::LayerNorm:
          return {layer_norm("layer_normalization", p, rows, mem(rows, in[0]), in[1], in[2],
                             mem(rows, out), nullptr)};
        case RowOpKind::AddLayerNorm: {
          // oneDNN has no fused residual add: binary add into a buffer of its own, then
          // layer_normalization; or the sum in the output, normalized in place.
          Stopwatch watch;
          dnnl::binary::primitive_desc add_pd(
              dnnl::binary::desc(dnnl::algorithm::binary_add, rows, rows, rows), engine_);
          auto sum = std::make_shared<std::vector<float>>(p.rows * p.n);
          std::vector<PeerVariant> variants;
          for (float* dst : {sum->data(), out}) {
            Args add_args{{DNNL_ARG_SRC_0, mem(rows, in[0])},
                          {DNNL_ARG_SRC_1, mem(rows, in[1])},
                          {DNNL_ARG_DST, mem(rows, dst)}};
            auto add =
                std::make_shared<std::pair<dnnl::binary, Args>>(dnnl::binary(add_pd), add_args);
            PeerVariant ln = layer_norm(
                dst == out ? "binary+layer_normalization in place" : "binary+layer_normalization",
                p, rows, mem(rows, dst), in[2], in[3], mem(rows, out), sum);
            auto run_ln = ln.run;
            ln.run = [add, run_ln, stream = stream_]() mutable {
              add->first.execute(stream, add->second);
              run_ln();
            };
            ln.setup_seconds = watch.seconds();
            variants.push_back(ln);
          }
          return variants;
        }
        case RowOpKind::Softmax: {
          Stopwatch watch;
          dnnl::softmax_forward::primitive_desc pd(
              dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, rows, 1), engine_);
          return {finish_row("softmax", dnnl::softmax_forward(pd),
                             {{DNNL_ARG_SRC, mem(rows, in[0])}, {DNNL_ARG_DST, mem(rows, out)}},
                             nullptr, watch)};
        }
        case RowOpKind::Gelu: {
          Stopwatch watch;
          dnnl::eltwise_forward::primitive_desc pd(
              dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference,
                                          dnnl::algorithm::eltwise_gelu_erf, rows, 0.f, 0.f),
              engine_);
          return {finish_row("eltwise_gelu_erf", dnnl::eltwise_forward(pd),
                             {{DNNL_ARG_SRC, mem(rows, in[0])}, {DNNL_ARG_DST, mem(rows, out)}},
                             nullptr, watch)};
        }
        case RowOpKind::Bias: {  // binary add of the bias, broadcast over rows
          Stopwatch watch;
          const memory::desc bias{{1, p.n}, memory::data_type::f32, tag::ab};
          dnnl::binary::primitive_desc pd(
              dnnl::binary::desc(dnnl::algorithm::binary_add, rows, bias, rows), engine_);
          return {finish_row("binary_add", dnnl::binary(pd),
                             {{DNNL_ARG_SRC_0, mem(rows, in[0])},
                              {DNNL_ARG_SRC_1, mem(bias, in[1])},
                              {DNNL_ARG_DST, mem(rows, out)}},
                             nullptr, watch)};
        }
        case RowOpKind::BiasGelu:
        case RowOpKind::BiasResidual: {
          // One pass: binary add of the bias (broadcast over rows) with gelu_erf as a
          // post-op; or binary add of the residual with the bias added as a post-op.
          Stopwatch watch;
          const memory::desc bias{{1, p.n}, memory::data_type::f32, tag::ab};
          const bool gelu = p.op == RowOpKind::BiasGelu;
          dnnl::post_ops po;
          if (gelu)
            po.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
          else
            po.append_binary(dnnl::algorithm::binary_add, bias);
          dnnl::primitive_attr attr;
          attr.set_post_ops(po);
          dnnl::binary::primitive_desc pd(
              dnnl::binary::desc(dnnl::algorithm::binary_add, rows, gelu ? bias : rows, rows), attr,
              engine_);
          Args args{{DNNL_ARG_SRC_0, mem(rows, in[0])},
                    {DNNL_ARG_SRC_1, gelu ? mem(bias, in[1]) : mem(rows, in[2])},
                    {DNNL_ARG_DST, mem(rows, out)}};
          if (!gelu) args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] = mem(bias, in[1]);
          return {finish_row(gelu ? "binary_add+eltwise_gelu_erf" : "binary_add+binary_add",
                             dnnl::binary(pd), std::move(args), nullptr, watch)};
        }
      }
    } catch (const dnnl::error& e) {
      throw std::runtime_error(std::string("oneDNN: ") + e.what());
    }
    throw std::runtime_error("unknown row operator");
  }

  std::vector<PeerVariant> prepare(const GemmProblem& p, const float* a, const float* b,
                                   float* c) override {
    check_problem(p);
    if (threads_ > 0) omp_set_num_threads(threads_);
    std::vector<PeerVariant> variants;
    try {
      variants.push_back(matmul(p, a, b, c));
      // inner_product has no batch: it needs one B for all rows.
      if (p.b_shared || p.batch == 1) variants.push_back(inner_product(p, a, b, c));
    } catch (const dnnl::error& e) {
      throw std::runtime_error(std::string("oneDNN: ") + e.what());
    }
    return variants;
  }

  std::vector<PeerVariant> prepare_fused(const GemmProblem& p, RowOpKind epilogue, const float* a,
                                         const float* b, const std::vector<const float*>& in,
                                         float* c) override {
    check_problem(p);
    if (p.batch != 1 || !p.b_shared ||
        (epilogue != RowOpKind::Bias && epilogue != RowOpKind::BiasGelu &&
         epilogue != RowOpKind::BiasResidual))
      return {};
    if (threads_ > 0) omp_set_num_threads(threads_);
    const memory::dim rows = p.m, n = p.n, k = p.k;
    const memory::desc src{{rows, k}, memory::data_type::f32, tag::ab};
    const memory::desc dst{{rows, n}, memory::data_type::f32, tag::ab};
    const memory::desc bias{{1, n}, memory::data_type::f32, tag::ab};
    dnnl::post_ops po;
    Args extra{{DNNL_ARG_BIAS, memory(bias, engine_, const_cast<float*>(in[0]))}};
    if (epilogue == RowOpKind::BiasGelu) {
      po.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
    } else if (epilogue == RowOpKind::BiasResidual) {
      po.append_binary(dnnl::algorithm::binary_add, dst);
      extra[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] =
          memory(dst, engine_, const_cast<float*>(in[1]));
    }
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    std::vector<PeerVariant> variants;
    try {
      {
        Stopwatch watch;
        const memory::desc wei{{k, n}, memory::data_type::f32, p.b_layout_nk ? tag::ba : tag::ab};
        dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, weights_request(p, wei), bias, dst),
                                        attr, engine_);
        variants.push_back(finish("matmul+post-ops", dnnl::matmul(pd), pd.weights_desc(), src, wei,
                                  dst, a, b, c, watch, extra));
      }
      {
        Stopwatch watch;
        const memory::desc wei{{n, k}, memory::data_type::f32, p.b_layout_nk ? tag::oi : tag::io};
        const memory::desc bias_n{{n}, memory::data_type::f32, tag::a};
        Args ip_extra = extra;
        ip_extra[DNNL_ARG_BIAS] = memory(bias_n, engine_, const_cast<float*>(in[0]));
        dnnl::inner_product_forward::primitive_desc pd(
            dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_inference, src,
                                              weights_request(p, wei), bias_n, dst),
            attr, engine_);
        variants.push_back(finish("inner_product+post-ops", dnnl::inner_product_forward(pd),
                                  pd.weights_desc(), src, wei, dst, a, b, c, watch, ip_extra));
      }
    } catch (const dnnl::error& e) {
      throw std::runtime_error(std::string("oneDNN: ") + e.what());
    }
    return variants;
  }

 private:
  using Args = std::unordered_map<int, memory>;

  PeerVariant matmul(const GemmProblem& p, const float* a, const float* b, float* c) {
    Stopwatch watch;
    const memory::dim rows = gemm_rows(p), n = p.n, k = p.k;
    memory::desc src, wei, dst;
    if (gemm_count(p) == 1) {
      src = {{rows, k}, memory::data_type::f32, tag::ab};
      wei = {{k, n}, memory::data_type::f32, p.b_layout_nk ? tag::ba : tag::ab};
      dst = {{rows, n}, memory::data_type::f32, tag::ab};
    } else {
      src = {{p.batch, rows, k}, memory::data_type::f32, tag::abc};
      wei = {{p.batch, k, n}, memory::data_type::f32, p.b_layout_nk ? tag::acb : tag::abc};
      dst = {{p.batch, rows, n}, memory::data_type::f32, tag::abc};
    }
    dnnl::matmul::primitive_desc pd({src, weights_request(p, wei), dst}, engine_);
    return finish("matmul", dnnl::matmul(pd), pd.weights_desc(), src, wei, dst, a, b, c, watch);
  }

  PeerVariant inner_product(const GemmProblem& p, const float* a, const float* b, float* c) {
    Stopwatch watch;
    const memory::dim rows = gemm_rows(p), n = p.n, k = p.k;
    memory::desc src{{rows, k}, memory::data_type::f32, tag::nc};
    memory::desc wei{{n, k}, memory::data_type::f32, p.b_layout_nk ? tag::oi : tag::io};
    memory::desc dst{{rows, n}, memory::data_type::f32, tag::nc};
    dnnl::inner_product_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_inference, src, weights_request(p, wei), dst}, engine_);
    return finish("inner_product", dnnl::inner_product_forward(pd), pd.weights_desc(), src, wei,
                  dst, a, b, c, watch);
  }

  // Constant weights may be reordered once into the primitive's preferred layout; a B that
  // changes per call (attention) has to be read as it is.
  static memory::desc weights_request(const GemmProblem& p, const memory::desc& user) {
    if (!p.b_shared) return user;
    return {user.dims(), memory::data_type::f32, tag::any};
  }

  PeerVariant finish(const std::string& label, dnnl::primitive prim, const memory::desc& prim_wei,
                     const memory::desc& src, const memory::desc& wei, const memory::desc& dst,
                     const float* a, const float* b, float* c, const Stopwatch& watch,
                     const Args& extra = {}) {
    memory user_wei(wei, engine_, const_cast<float*>(b));
    memory wei_mem = user_wei;
    if (prim_wei != wei) {
      wei_mem = memory(prim_wei, engine_);
      dnnl::reorder(user_wei, wei_mem).execute(stream_, user_wei, wei_mem);
      stream_.wait();
    }
    Args args{{DNNL_ARG_SRC, memory(src, engine_, const_cast<float*>(a))},
              {DNNL_ARG_WEIGHTS, wei_mem},
              {DNNL_ARG_DST, memory(dst, engine_, c)}};
    args.insert(extra.begin(), extra.end());
    auto run = [prim, args, stream = stream_, threads = threads_]() mutable {
      // omp_set_num_threads binds to the calling thread; the harness may time on another.
      if (threads > 0) omp_set_num_threads(threads);
      prim.execute(stream, args);
      stream.wait();
    };
    return {label, run, watch.seconds()};
  }

  // layer_normalization of src into dst with gamma (scale) and beta (shift); `keep`
  // holds any buffer the primitive reads for as long as the variant lives.
  PeerVariant layer_norm(const std::string& label, const RowProblem& p, const memory::desc& rows,
                         const memory& src, const float* gamma, const float* beta,
                         const memory& dst, std::shared_ptr<const void> keep) {
    Stopwatch watch;
    const memory::desc vec{{p.n}, memory::data_type::f32, tag::a};
    dnnl::layer_normalization_forward::primitive_desc pd(
        dnnl::layer_normalization_forward::desc(
            dnnl::prop_kind::forward_inference, rows, float(p.eps),
            dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift),
        engine_);
    Args args{{DNNL_ARG_SRC, src},
              {DNNL_ARG_DST, dst},
              {DNNL_ARG_SCALE, memory(vec, engine_, const_cast<float*>(gamma))},
              {DNNL_ARG_SHIFT, memory(vec, engine_, const_cast<float*>(beta))},
              {DNNL_ARG_MEAN, memory(pd.mean_desc(), engine_)},
              {DNNL_ARG_VARIANCE, memory(pd.variance_desc(), engine_)}};
    return finish_row(label, dnnl::layer_normalization_forward(pd), std::move(args),
                      std::move(keep), watch);
  }

  PeerVariant finish_row(const std::string& label, dnnl::primitive prim, Args args,
                         std::shared_ptr<const void> keep, const Stopwatch& watch) {
    auto run = [prim, args, keep, stream = stream_, threads = threads_]() mutable {
      if (threads > 0) omp_set_num_threads(threads);
      prim.execute(stream, args);
      stream.wait();
    };
    return {label, run, watch.seconds()};
  }

  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  int threads_ = 0;
};

}  // namespace
}  // namespace dietcode::bench::peers

DIETCODE_DEFINE_PEER_ENTRY(dietcode::bench::peers::OnednnPeer)
