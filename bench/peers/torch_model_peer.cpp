// The libtorch model peers: the BERT encoder (model_peer_api.h) as a user of libtorch would
// run it for inference, in two forms (the factory's variant):
//   "eager"   libtorch's eager C++ API under InferenceMode (NoGradGuard that also skips
//             version counters and view tracking: ~20 us less per layer, same kernels);
//   "script"  the same encoder as TorchScript (compiled from source with Module::define, as
//             torch.jit.script compiles a Python module), frozen (torch.jit.freeze: weights
//             become constants, the graph is optimized with them), run by the graph executor.
// Weights are owned, contiguous float32 tensors, transposed once at load to [in, out]; Q, K
// and V are one stacked Linear, as optimized PyTorch BERTs do. Dense layers are addmm (addmv
// for a single token), i.e. libtorch's BLAS (Debian: libblas.so.3, normally OpenBLAS).
#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

// The eager API and TorchScript's module, without torch/torch.h's nn, optim and data.
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <torch/version.h>

#include "benchmark/model_peer_api.h"

namespace dietcode::bench::peers {
namespace {

// The BLAS libtorch calls for float GEMMs (Debian's libtorch: libblas.so.3, normally
// OpenBLAS). libtorch's set_num_threads sets its OpenMP pool (and MKL's) but not this BLAS's
// threads, which are set here for OpenBLAS and BLIS; reference BLAS is single-threaded.
// Resolved once: libblas.so.3 is loaded with libtorch, before the plugin, and stays.
class Blas {
 public:
  Blas() {
    void* blas = dlopen("libblas.so.3", RTLD_LAZY | RTLD_NOLOAD);
    if (!blas) return;
    if ((openblas_ = reinterpret_cast<void (*)(int)>(dlsym(blas, "openblas_set_num_threads")))) {
      auto parallel = reinterpret_cast<int (*)()>(dlsym(blas, "openblas_get_parallel"));
      own_pool_ = parallel && parallel() == 1;  // 0 sequential, 1 pthreads, 2 OpenMP
    } else if ((blis_ = reinterpret_cast<void (*)(int64_t)>(
                    dlsym(blas, "bli_thread_set_num_threads")))) {
      auto pthreads = reinterpret_cast<int64_t (*)()>(dlsym(blas, "bli_info_get_enable_pthreads"));
      own_pool_ = pthreads && pthreads() != 0;
    }
    dlclose(blas);  // drops only the reference NOLOAD took
  }
  void set_threads(int threads) const {
    if (openblas_) openblas_(threads);
    if (blis_) blis_(threads);
  }
  // Whether the BLAS runs a pthread pool of its own rather than libtorch's OpenMP one.
  bool own_pool() const { return own_pool_; }

 private:
  void (*openblas_)(int) = nullptr;
  void (*blis_)(int64_t) = nullptr;
  bool own_pool_ = false;
};

// Dense weights are stored transposed, [in, out]: OpenBLAS 0.3.21's sgemm is 5-25% faster
// on them than on PyTorch's [out, in] (addmm(b, x, w.t())), and its sgemv is as fast.
struct Layer {
  torch::Tensor w_qkv, b_qkv;  // [h, 3h], [3h]; the query columns pre-scaled by 1/sqrt(D)
  torch::Tensor w_o, b_o, ln1_g, ln1_b;
  torch::Tensor w_i, b_i, w_out, b_out, ln2_g, ln2_b;
};

// x [T, in] wt [in, out] + b. One row is a matrix-vector product: OpenBLAS 0.3.21's sgemm
// packs all of B even for one row of A, which makes it 4-6x slower than sgemv there.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& wt, const torch::Tensor& b) {
  if (x.size(0) == 1) return torch::addmv(b, wt.t(), x.select(0, 0)).unsqueeze(0);
  return torch::addmm(b, x, wt);
}

// acc [T, out] += x [T, in] wt [in, out] (the GEMM's beta = 1).
void accumulate(torch::Tensor& acc, const torch::Tensor& x, const torch::Tensor& wt) {
  if (x.size(0) == 1) {
    acc.select(0, 0).addmv_(wt.t(), x.select(0, 0));
  } else {
    acc.addmm_(x, wt);
  }
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The twelve tensors of a layer, in the order of the script's layer() arguments.
const std::vector<std::pair<const char*, torch::Tensor Layer::*>> kLayerTensors = {
    {"w_qkv", &Layer::w_qkv}, {"b_qkv", &Layer::b_qkv}, {"w_o", &Layer::w_o},
    {"b_o", &Layer::b_o},     {"ln1_g", &Layer::ln1_g}, {"ln1_b", &Layer::ln1_b},
    {"w_i", &Layer::w_i},     {"b_i", &Layer::b_i},     {"w_out", &Layer::w_out},
    {"b_out", &Layer::b_out}, {"ln2_g", &Layer::ln2_g}, {"ln2_b", &Layer::ln2_b}};

// The eager forward below in TorchScript: the same operators in the same order. Layer n's
// tensors are the module's attributes l<n>_<name>; forward calls layer() once per layer.
std::string encoder_script(const EncoderConfig& c) {
  const int64_t h = c.hidden, d = c.hidden / c.heads;
  std::ostringstream s;
  s.precision(17);
  s << "def linear(self, x: Tensor, w: Tensor, b: Tensor) -> Tensor:\n"
    << "    if x.size(0) == 1:\n"
    << "        return torch.addmv(b, w.t(), x[0]).unsqueeze(0)\n"
    << "    return torch.addmm(b, x, w)\n"
    << "def accumulate(self, acc: Tensor, x: Tensor, w: Tensor) -> Tensor:\n"
    << "    if x.size(0) == 1:\n"
    << "        return torch.addmv(acc[0], w.t(), x[0]).unsqueeze(0)\n"
    << "    return torch.addmm(acc, x, w)\n"
    << "def layer(self, x: Tensor";
  for (const auto& [name, member] : kLayerTensors) s << ", " << name << ": Tensor";
  s << ") -> Tensor:\n"
    << "    t = x.size(0)\n"
    << "    qkv = self.linear(x, w_qkv, b_qkv)\n"
    << "    q = qkv.narrow(1, 0, " << h << ").view([t, " << c.heads << ", " << d
    << "]).transpose(0, 1)\n"
    << "    k = qkv.narrow(1, " << h << ", " << h << ").view([t, " << c.heads << ", " << d
    << "]).permute([1, 2, 0])\n"
    << "    v = qkv.narrow(1, " << 2 * h << ", " << h << ").view([t, " << c.heads << ", " << d
    << "]).transpose(0, 1)\n"
    << "    probs = torch.bmm(q, k).softmax(-1)\n"
    << "    ctx = torch.bmm(probs, v).transpose(0, 1).reshape([t, " << h << "])\n"
    << "    a = self.accumulate(x + b_o, ctx, w_o)\n"
    << "    a = torch.layer_norm(a, [" << h << "], ln1_g, ln1_b, " << c.eps << ")\n"
    << "    h1 = torch.gelu(self.linear(a, w_i, b_i))\n"
    << "    y = self.accumulate(a + b_out, h1, w_out)\n"
    << "    return torch.layer_norm(y, [" << h << "], ln2_g, ln2_b, " << c.eps << ")\n"
    << "def forward(self, x: Tensor) -> Tensor:\n";
  for (int64_t n = 0; n < c.layers; ++n) {
    s << "    x = self.layer(x";
    for (const auto& [name, member] : kLayerTensors) s << ", self.l" << n << "_" << name;
    s << ")\n";
  }
  s << "    return x\n";
  return s.str();
}

// The encoder as a frozen TorchScript module over the layers' tensors.
torch::jit::Module frozen_encoder(const EncoderConfig& c, const std::vector<Layer>& layers) {
  torch::jit::Module m("DietcodeBertEncoder");
  for (size_t n = 0; n < layers.size(); ++n)
    for (const auto& [name, member] : kLayerTensors) {
      std::ostringstream attribute;  // l<n>_<name>, as encoder_script reads it
      attribute << 'l' << n << '_' << name;
      m.register_attribute(attribute.str(), c10::TensorType::get(), layers[n].*member);
    }
  m.define(encoder_script(c));
  m.eval();
  return torch::jit::freeze(m);
}

enum class Variant { kEager, kScript };

class TorchModelPeer final : public ModelPeer {
 public:
  explicit TorchModelPeer(Variant variant) : variant_(variant) {}
  std::string name() const override {
    return variant_ == Variant::kEager ? "libtorch" : "libtorch-script";
  }
  std::string version() const override { return TORCH_VERSION; }

  void set_threads(int threads) override {
    if (threads < 1) throw std::runtime_error("libtorch: thread count must be positive");
    static std::once_flag interop_once;
    std::call_once(interop_once, [] {
      try {  // allowed once, before any inter-op work; the encoder does none
        at::set_num_interop_threads(1);
      } catch (const std::exception&) {
      }
    });
    threads_ = threads;
    apply_threads();
  }

  void load(const EncoderConfig& c, const std::map<std::string, WeightView>& weights) override {
    if (c.layers < 1 || c.hidden < 1 || c.heads < 1 || c.ffn < 1 || c.hidden % c.heads != 0)
      throw std::runtime_error("libtorch: bad encoder config (layers " + std::to_string(c.layers) +
                               ", hidden " + std::to_string(c.hidden) + ", heads " +
                               std::to_string(c.heads) + ", ffn " + std::to_string(c.ffn) + ")");
    layers_.clear();
    script_.reset();
    try {
      c10::InferenceMode inference;
      const int64_t h = c.hidden, f = c.ffn;
      const double scale = 1.0 / std::sqrt(static_cast<double>(h / c.heads));
      std::vector<Layer> layers;
      for (int64_t n = 0; n < c.layers; ++n) {
        const std::string p = "encoder.layer." + std::to_string(n) + ".";
        // A view of the caller's weight, checked; copied below before load returns.
        auto view = [&](const std::string& name, std::vector<int64_t> shape) {
          auto it = weights.find(p + name);
          if (it == weights.end() || !it->second.data)
            throw std::runtime_error("libtorch: missing weight " + p + name);
          if (it->second.shape != shape)
            throw std::runtime_error("libtorch: weight " + p + name + " has shape " +
                                     shape_text(it->second.shape) + ", expected " +
                                     shape_text(shape));
          return torch::from_blob(const_cast<float*>(it->second.data), shape, torch::kFloat32);
        };
        auto own = [&](const std::string& name, std::vector<int64_t> shape) {
          return view(name, std::move(shape)).clone(at::MemoryFormat::Contiguous);
        };
        auto own_t = [&](const std::string& name, std::vector<int64_t> shape) {
          return view(name, std::move(shape)).t().contiguous();
        };
        Layer l;
        // Folding the softmax scale into the query projection is exact for a power-of-two
        // scale (D = 64: 1/8) and saves a pass over the [H, T, T] scores.
        l.w_qkv = torch::cat({view("attention.self.query.weight", {h, h}) * scale,
                              view("attention.self.key.weight", {h, h}),
                              view("attention.self.value.weight", {h, h})},
                             0)
                      .t()
                      .contiguous();
        l.b_qkv = torch::cat(
            {view("attention.self.query.bias", {h}) * scale, view("attention.self.key.bias", {h}),
             view("attention.self.value.bias", {h})},
            0);
        l.w_o = own_t("attention.output.dense.weight", {h, h});
        l.b_o = own("attention.output.dense.bias", {h});
        l.ln1_g = own("attention.output.LayerNorm.weight", {h});
        l.ln1_b = own("attention.output.LayerNorm.bias", {h});
        l.w_i = own_t("intermediate.dense.weight", {f, h});
        l.b_i = own("intermediate.dense.bias", {f});
        l.w_out = own_t("output.dense.weight", {h, f});
        l.b_out = own("output.dense.bias", {h});
        l.ln2_g = own("output.LayerNorm.weight", {h});
        l.ln2_b = own("output.LayerNorm.bias", {h});
        layers.push_back(std::move(l));
      }
      config_ = c;
      if (variant_ == Variant::kScript) {
        script_ = frozen_encoder(c, layers);  // holds the weights as constants
      } else {
        layers_ = std::move(layers);
      }
    } catch (const c10::Error& e) {
      throw std::runtime_error(std::string("libtorch: load: ") + e.what_without_backtrace());
    }
  }

  void forward(const float* input, int64_t t, float* output) override {
    if (layers_.empty() && !script_) throw std::runtime_error("libtorch: forward before load");
    if (t < 0) throw std::runtime_error("libtorch: negative sequence length");
    if (t == 0) return;
    try {
      c10::InferenceMode inference;
      apply_threads();
      const int64_t h = config_.hidden, heads = config_.heads, d = h / heads;
      const double eps = config_.eps;
      torch::Tensor x = torch::from_blob(const_cast<float*>(input), {t, h}, torch::kFloat32);
      if (script_) x = script_->forward({x}).toTensor();
      for (const Layer& l : layers_) {
        torch::Tensor qkv = linear(x, l.w_qkv, l.b_qkv);  // [T, 3h]
        // [T, h] column slices as [H, T, D] (q, v) and [H, D, T] (k) views.
        torch::Tensor q = qkv.narrow(1, 0, h).view({t, heads, d}).transpose(0, 1);
        torch::Tensor k = qkv.narrow(1, h, h).view({t, heads, d}).permute({1, 2, 0});
        torch::Tensor v = qkv.narrow(1, 2 * h, h).view({t, heads, d}).transpose(0, 1);
        torch::Tensor probs = torch::bmm(q, k).softmax(-1);  // [H, T, T], scale in q
        torch::Tensor ctx = torch::bmm(probs, v).transpose(0, 1).reshape({t, h});
        // Residual and bias first, then the GEMM accumulates into them (beta = 1).
        torch::Tensor a = x.add(l.b_o);
        accumulate(a, ctx, l.w_o);
        a = torch::layer_norm(a, {h}, l.ln1_g, l.ln1_b, eps);
        torch::Tensor h1 = linear(a, l.w_i, l.b_i);  // [T, ffn]
        torch::gelu_(h1);                            // exact (erf)
        torch::Tensor y = a.add(l.b_out);
        accumulate(y, h1, l.w_out);
        x = torch::layer_norm(y, {h}, l.ln2_g, l.ln2_b, eps);
      }
      torch::from_blob(output, {t, h}, torch::kFloat32).copy_(x);
    } catch (const c10::Error& e) {
      throw std::runtime_error(std::string("libtorch: forward: ") + e.what_without_backtrace());
    }
  }

 private:
  // Two busy-waiting pools on the same cores, libtorch's OpenMP workers and a pthreads
  // BLAS's (Debian's default OpenBLAS), take turns spinning while the other works: on 2
  // threads, 4-50x slower than one. So with such a BLAS libtorch's own operators
  // (LayerNorm, softmax, GELU, adds: a small share of the time) run on the calling thread
  // and the GEMMs on `threads`; with an OpenMP BLAS (or MKL) both use `threads`.
  // OpenMP's thread count belongs to the calling thread and the BLAS's pool is shared with
  // any other plugin linking the same BLAS, so forward re-applies both.
  void apply_threads() {
    if (threads_ < 1) return;
    const int intra_op = blas_.own_pool() ? 1 : threads_;
    if (at::get_num_threads() != intra_op) torch::set_num_threads(intra_op);
    blas_.set_threads(threads_);
  }

  Variant variant_;
  EncoderConfig config_;
  std::vector<Layer> layers_;                 // eager
  std::optional<torch::jit::Module> script_;  // script
  int threads_ = 0;
  Blas blas_;
};

}  // namespace
}  // namespace dietcode::bench::peers

extern "C" __attribute__((visibility("default"))) ::dietcode::bench::ModelPeer*
dietcode_make_model_peer(const char* variant) {
  using ::dietcode::bench::peers::Variant;
  const std::string v = variant ? variant : "";
  if (v == "eager") return new ::dietcode::bench::peers::TorchModelPeer(Variant::kEager);
  if (v == "script") return new ::dietcode::bench::peers::TorchModelPeer(Variant::kScript);
  return nullptr;
}
