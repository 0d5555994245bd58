#include "model/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <vector>

#include "codegen/llvm/object_cache.h"
#include "codegen/llvm/target.h"
#include "model/safetensors.h"
#include "runtime/buffer.h"
#include "runtime/module.h"
#include "runtime/thread_pool.h"
#include "support/error.h"
#include "support/parallel_tasks.h"

namespace dietcode::model {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Layers in a weights file: encoder.layer.0. ... encoder.layer.(n-1). all present.
int64_t count_layers(const Safetensors& w) {
  int64_t n = 0;
  while (w.contains(fmt::format("encoder.layer.{}.attention.self.query.weight", n))) ++n;
  if (n == 0)
    user_error(
        "{}: no tensor encoder.layer.0.attention.self.query.weight; expected BERT "
        "checkpoint names (dietcode weights FILE lists them)",
        w.path());
  return n;
}

int64_t dim_of(const Safetensors& w, const std::string& name, size_t axis) {
  auto it = w.tensors().find(name);
  if (it == w.tensors().end()) user_error("{}: no tensor {}", w.path(), name);
  if (it->second.shape.size() <= axis)
    user_error("{}: tensor {} has rank {}; expected at least {}", w.path(), name,
               it->second.shape.size(), axis + 1);
  return it->second.shape[axis];
}

}  // namespace

struct Model::Impl {
  BertConfig config;
  Graph graph;
  ModelLoadTimes times;
  std::vector<std::string> operator_names;
  std::vector<runtime::Module> modules;  // one per distinct operator
  int64_t scratch_bytes = 0;             // the most packing scratch any of their kernels takes
  Safetensors weights;
  std::vector<runtime::AlignedBuffer> stacked;  // Q K V weights and biases, stacked
  std::vector<const float*> data;               // per tensor: weights; others null
  int input = -1;                               // the graph's input tensor
  struct Step {
    const runtime::Module* module;
    runtime::PackedWeights packed;
  };
  std::vector<Step> steps;  // per node

  // Plans and workspaces, grown under the mutex; a call holds one workspace at a time.
  mutable std::mutex mutex;
  mutable std::shared_ptr<const MemoryPlan> plan;
  mutable std::vector<std::unique_ptr<runtime::AlignedBuffer>> free_workspaces;
};

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

Model Model::load(const std::string& model_dir, const std::string& weights_path,
                  const ModelOptions& options) {
  namespace fs = std::filesystem;
  auto impl = std::make_unique<Impl>();
  Impl& m = *impl;

  // The modules: <name>.module.json for each distinct operator.
  auto start = std::chrono::steady_clock::now();
  if (!fs::is_directory(model_dir))
    user_error("{}: not a model directory; `dietcode tune bert-base --out {}` writes one",
               model_dir, model_dir);
  const schedule::Isa host = codegen::host_target().isa;
  std::map<std::string, runtime::ModuleSpec> specs;
  for (const char* name : {"qkv", "attention", "out", "ln", "ffn1", "ffn2"}) {
    const std::string path = (fs::path(model_dir) / (std::string(name) + ".module.json")).string();
    if (!fs::exists(path))
      user_error(
          "{}: missing; a model directory holds the modules of qkv, attention, out, ln, "
          "ffn1 and ffn2 (`dietcode tune bert-base --out {}` writes them)",
          path, model_dir);
    runtime::ModuleSpec spec = runtime::load_module_spec(path);
    if (!codegen::host_supports(spec.isa)) {
      if (!options.retarget_to_host)
        user_error("{}: tuned for {}, which this CPU ({}) lacks; tune again here or retarget", path,
                   to_string(spec.isa), codegen::host_target().cpu);
      spec = runtime::retarget(spec, host);
    }
    specs[name] = std::move(spec);
  }

  // The thread pool's workers start now, not in whichever forward call first runs a
  // parallel loop (a forward allocates nothing once its workspace exists).
  runtime::ThreadPool::global();

  // The architecture: sizes from the weights, heads and eps from the modules.
  auto wstart = std::chrono::steady_clock::now();
  m.weights = Safetensors::open(weights_path);
  const Safetensors& w = m.weights;
  BertConfig& c = m.config;
  const int64_t in_file = count_layers(w);
  if (options.layers < 0 || options.layers > in_file)
    user_error("{} layers asked for; {} has {}", options.layers, weights_path, in_file);
  c.layers = options.layers > 0 ? options.layers : in_file;
  c.hidden = dim_of(w, "encoder.layer.0.attention.self.query.weight", 0);
  c.ffn = dim_of(w, "encoder.layer.0.intermediate.dense.weight", 0);
  c.heads = specs["attention"].op.n;
  c.eps = specs["ln"].op.eps;
  c.t_min = specs["qkv"].op.m_min;
  c.t_max = specs["qkv"].op.m_max;
  c.check();
  m.graph = bert_encoder(c);
  m.input = m.graph.input_id();
  for (const NamedOperator& o : bert_operators(c)) {
    const ops::OperatorSpec& have = specs[o.name].op;
    if (operator_key(have) != operator_key(o.op))
      user_error(
          "{}/{}.module.json computes {}; the weights in {} need {} (a model directory tuned "
          "for another model size?)",
          model_dir, o.name, have.describe(), weights_path, o.op.describe());
  }
  double weights_seconds = seconds_since(wstart);
  double modules_seconds = std::chrono::duration<double>(wstart - start).count();

  start = std::chrono::steady_clock::now();
  codegen::ObjectCacheScope cache(options.code_cache ? (fs::path(model_dir) / "jit-cache").string()
                                                     : std::string());
  const codegen::ObjectCacheStats cache_before = codegen::object_cache_stats();
  std::map<std::string, int> module_of;
  std::vector<runtime::ModuleSpec> to_compile;
  for (const NamedOperator& o : bert_operators(c)) {
    module_of[operator_key(o.op)] = int(to_compile.size());
    m.operator_names.push_back(o.name);
    to_compile.push_back(specs[o.name]);
  }
  m.modules = runtime::Module::compile_all(to_compile);
  for (const runtime::Module& module : m.modules)
    m.scratch_bytes = std::max(m.scratch_bytes, module.scratch_bytes());
  const codegen::ObjectCacheStats cache_after = codegen::object_cache_stats();
  m.times.kernels_from_cache = cache_after.hits - cache_before.hits;
  m.times.kernels_compiled =
      (cache_after.misses - cache_before.misses) + (cache_after.damaged - cache_before.damaged);
  m.times.modules_seconds = modules_seconds + seconds_since(start);

  // Weights: mapped, but Q, K and V stacked into one [3 hidden, hidden] matrix (and bias).
  wstart = std::chrono::steady_clock::now();
  const int64_t h = c.hidden;
  m.data.assign(m.graph.tensors().size(), nullptr);
  for (int id = 0; id < int(m.graph.tensors().size()); ++id) {
    const GraphTensor& t = m.graph.tensor(id);
    if (t.kind != TensorKind::Weight) continue;
    const size_t qkv = t.name.find("attention.self.qkv.");
    if (qkv == std::string::npos) {
      m.data[id] = w.tensor(t.name, t.shape);
      continue;
    }
    const bool bias = t.name.ends_with(".bias");
    const std::string prefix = t.name.substr(0, qkv) + "attention.self.";
    runtime::AlignedBuffer& out = m.stacked.emplace_back(3 * h * (bias ? 1 : h));
    int part = 0;
    for (const char* which : {"query", "key", "value"}) {
      const std::vector<int64_t> shape =
          bias ? std::vector<int64_t>{h} : std::vector<int64_t>{h, h};
      const float* src = w.tensor(prefix + which + (bias ? ".bias" : ".weight"), shape);
      const int64_t n = bias ? h : h * h;
      std::memcpy(out.data() + part++ * n, src, sizeof(float) * size_t(n));
    }
    m.data[id] = out.data();
  }
  for (const GraphNode& n : m.graph.nodes())
    m.steps.push_back({&m.modules[module_of.at(operator_key(n.op))], {}});
  // Dense weights (input 1) packed for every kernel that wants them, one matrix at a time
  // on each core: packing is bound by writing (and the OS clearing) fresh pages.
  std::vector<int> dense;
  for (int i = 0; i < int(m.graph.nodes().size()); ++i)
    if (m.graph.nodes()[i].op.op == "dense") dense.push_back(i);
  parallel_tasks(int(dense.size()), [&](int task) {
    const int i = dense[task];
    const int weights = m.graph.nodes()[i].inputs[1];
    m.steps[i].packed = m.steps[i].module->prepack(
        {c.t_min}, {m.data[weights], m.graph.tensor(weights).elements(1)});
  });
  // A stacked Q K V weight that no node reads unpacked (every reader a dense step whose
  // kernels all read it packed) is not read again: it is freed (12 layers: 85 MB of the 340 MB
  // of weights), and its input passed as null, which Module::run replaces by the packed buffer.
  std::vector<char> read_raw(m.graph.tensors().size(), 0);
  for (int i = 0; i < int(m.graph.nodes().size()); ++i) {
    const GraphNode& n = m.graph.nodes()[i];
    for (size_t p = 0; p < n.inputs.size(); ++p)
      if (!(n.op.op == "dense" && p == 1 && m.steps[i].packed.covers_every_kernel()))
        read_raw[n.inputs[p]] = 1;
  }
  for (runtime::AlignedBuffer& b : m.stacked)
    for (int id = 0; id < int(m.data.size()); ++id)
      if (b.size() > 0 && b.data() == m.data[id] && !read_raw[id]) {
        b = runtime::AlignedBuffer();
        m.data[id] = nullptr;
      }
  m.times.weights_seconds = weights_seconds + seconds_since(wstart);
  m.plan = std::make_shared<MemoryPlan>(plan_memory(m.graph, std::max<int64_t>(c.t_max, 1)));
  return Model(std::move(impl));
}

void Model::forward(const float* input, int64_t t, float* output) const {
  run(input, t, output, nullptr);
}

void Model::forward_profiled(const float* input, int64_t t, float* output,
                             std::vector<double>& node_seconds) const {
  node_seconds.resize(impl_->graph.nodes().size(), 0.0);
  run(input, t, output, &node_seconds);
}

void Model::forward_choosing(const float* input, int64_t t, float* output,
                             const std::vector<KernelChoice>& choices,
                             std::vector<double>& node_seconds) const {
  const Impl& m = *impl_;
  std::vector<int> kernel_of(m.modules.size(), -1);
  for (const KernelChoice& c : choices) {
    const runtime::Module& mod = module(c.module);
    if (c.kernel < 0 || c.kernel >= mod.num_kernels())
      user_error("module {}: kernel {} asked for; it has {}", c.module, c.kernel,
                 mod.num_kernels());
    kernel_of[&mod - m.modules.data()] = c.kernel;
  }
  node_seconds.resize(m.graph.nodes().size(), 0.0);
  run(input, t, output, &node_seconds, &kernel_of);
}

const runtime::Module& Model::module(const std::string& name) const {
  const Impl& m = *impl_;
  for (size_t i = 0; i < m.operator_names.size(); ++i)
    if (m.operator_names[i] == name) return m.modules[i];
  std::string known;
  for (const std::string& n : m.operator_names) known += (known.empty() ? "" : ", ") + n;
  user_error("no module {} in this model; it has {}", name, known);
}

const std::vector<std::string>& Model::module_names() const {
  return impl_->operator_names;
}

void Model::run(const float* input, int64_t t, float* output, std::vector<double>* node_seconds,
                const std::vector<int>* kernel_of) const {
  if (t < 1) user_error("forward: sequence length {}; expected >= 1", t);
  if (!input || !output) user_error("forward: null input or output");
  Impl& m = *impl_;
  // This thread's packing scratch and call arguments (allocated on its first call only).
  runtime::prepare_calling_thread(m.scratch_bytes);
  // A plan that holds T and a workspace of its size.
  std::shared_ptr<const MemoryPlan> plan;
  std::unique_ptr<runtime::AlignedBuffer> workspace;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    if (t > m.plan->t_capacity)
      m.plan =
          std::make_shared<MemoryPlan>(plan_memory(m.graph, std::max(t, 2 * m.plan->t_capacity)));
    plan = m.plan;
    // Workspaces of an outgrown plan are dropped: memory follows the longest T, not the
    // number of lengths seen.
    std::erase_if(m.free_workspaces, [&](const auto& w) { return w->size() < plan->elements; });
    if (!m.free_workspaces.empty()) {
      workspace = std::move(m.free_workspaces.back());
      m.free_workspaces.pop_back();
    }
  }
  if (!workspace)
    workspace = std::make_unique<runtime::AlignedBuffer>(std::max<int64_t>(plan->elements, 1));

  const Graph& g = m.graph;
  const int in = m.input;
  auto pointer = [&](int id) -> float* {
    if (id == g.output()) return output;
    if (id == in) return const_cast<float*>(input);
    if (g.tensor(id).kind == TensorKind::Weight) return const_cast<float*>(m.data[id]);
    return workspace->data() + plan->offset[id];
  };
  // Per-thread argument lists: no allocation once grown.
  thread_local std::vector<runtime::ConstTensor> args;
  thread_local std::vector<int64_t> shape(1);
  shape[0] = t;
  for (size_t s = 0; s < g.nodes().size(); ++s) {
    const GraphNode& n = g.nodes()[s];
    args.clear();
    for (int id : n.inputs) args.push_back({pointer(id), g.tensor(id).elements(t)});
    const Impl::Step& step = m.steps[s];
    const auto start =
        node_seconds ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    const runtime::PackedWeights* packed = step.packed.per_kernel.empty() ? nullptr : &step.packed;
    const int chosen = kernel_of ? (*kernel_of)[step.module - m.modules.data()] : -1;
    if (chosen < 0)
      step.module->run(shape, args, {pointer(n.output), g.tensor(n.output).elements(t)}, packed);
    else
      step.module->run_kernel(chosen, shape, args,
                              {pointer(n.output), g.tensor(n.output).elements(t)}, packed);
    if (node_seconds) (*node_seconds)[s] += seconds_since(start);
  }

  std::lock_guard<std::mutex> lock(m.mutex);
  if (workspace->size() >= m.plan->elements) m.free_workspaces.push_back(std::move(workspace));
}

Model::Memory Model::memory() const {
  const Impl& m = *impl_;
  Memory out;
  for (const runtime::AlignedBuffer& b : m.stacked) out.weight_bytes += 4 * b.size();
  for (const Impl::Step& s : m.steps) out.weight_bytes += s.packed.bytes();
  std::lock_guard<std::mutex> lock(m.mutex);
  for (const auto& w : m.free_workspaces) out.workspace_bytes += 4 * w->size();
  out.workspaces = int(m.free_workspaces.size());
  out.t_capacity = m.plan->t_capacity;
  return out;
}

const BertConfig& Model::config() const {
  return impl_->config;
}
const Graph& Model::graph() const {
  return impl_->graph;
}
std::string ModelLoadTimes::describe_modules() const {
  return fmt::format(
      "{:.2f} s (modules read + JIT, kernels and dispatchers: {} compiled, {} from the code "
      "cache)",
      modules_seconds, kernels_compiled, kernels_from_cache);
}

const ModelLoadTimes& Model::load_times() const {
  return impl_->times;
}

int Model::tuned_threads() const {
  int threads = 1;
  for (const runtime::Module& m : impl_->modules) threads = std::max(threads, m.spec().threads);
  return threads;
}

std::string Model::describe() const {
  std::string s;
  for (size_t i = 0; i < impl_->modules.size(); ++i) {
    const runtime::ModuleSpec& spec = impl_->modules[i].spec();
    s += fmt::format("  {:<10} {} ({} kernels, {}, {} thread{})\n", impl_->operator_names[i],
                     spec.op.describe(), spec.kernels.size(), to_string(spec.isa), spec.threads,
                     spec.threads == 1 ? "" : "s");
  }
  return s;
}

}  // namespace dietcode::model
