#include "benchmark/encoder_bench.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <thread>

#include "benchmark/harness.h"
#include "benchmark/model_peer_api.h"
#include "benchmark/report.h"
#include "benchmark/roofline.h"
#include "codegen/llvm/target.h"
#include "model/bert_reference.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "reference/reference.h"
#include "runtime/buffer.h"
#include "runtime/module.h"
#include "runtime/thread_pool.h"
#include "support/error.h"

namespace dietcode::bench {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Engines are timed one after another with waits between them (a BLAS's workers must stop
// spinning), and both vCPUs of an idle VM come back slow: with a 5 ms warm-up our 1-layer
// encoder at 2 threads and T = 2..13 ran at 0.33-1.17 ms from run to run, 0.27 ms when
// called back to back (`dietcode run`). So every engine runs untimed for this long first,
// as ONNX Runtime's script, which times every length back to back, effectively does.
constexpr double kEncoderWarmUpSeconds = 0.05;

// A peer whose first round at a length was at least this many times the fastest peer's
// there cannot be the best peer at that length: in the later rounds it is timed with one
// call (ONNX Runtime's script is asked for one run), and an in-process peer without the
// warm-up where that call lasts longer than kLongCallMs (the warm-up's 1.5-4 ms of a slow
// vCPU are then below 2%). libtorch's two engines on twelve layers were 3-8x slower than
// ONNX Runtime at 1 thread and took 2.7 of the main job's 16 minutes (stop 59, 9 timed calls
// and 3 warm-ups a length each).
constexpr double kFarBehind = 2.0;
constexpr double kLongCallMs = 200;

// Median, best and worst of `repeat` timed calls after a warm-up of `warm_up_seconds`
// (none if 0).
EncoderMeasurement time_calls(int repeat, const std::function<void()>& call,
                              double warm_up_seconds = kEncoderWarmUpSeconds) {
  if (warm_up_seconds > 0) warm_up(call, warm_up_seconds);
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    auto start = Clock::now();
    call();
    ms.push_back(ms_since(start));
  }
  std::sort(ms.begin(), ms.end());
  EncoderMeasurement m;
  m.median_ms = ms[ms.size() / 2];
  m.best_ms = ms.front();
  m.worst_ms = ms.back();
  return m;
}

// The bracketed figure: the slowest round's median.
double slowest_round(const EncoderMeasurement& m) {
  return m.round_ms.empty() ? m.median_ms : *std::max_element(m.round_ms.begin(), m.round_ms.end());
}

// ||got - want|| / ||want||, float against float (both engines' outputs).
double relative_difference(std::span<const float> got, std::span<const float> want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

struct LoadedModelPeer {
  std::unique_ptr<ModelPeer> peer;
  std::string why_not;  // empty when loaded
};

LoadedModelPeer load_model_peer(const std::string& dir, const std::string& name,
                                const char* variant) {
  const std::string path = dir + "/libdietcode_model_peer_" + name + ".so";
  if (!fs::exists(path)) return {nullptr, "not built (no " + path + ")"};
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // never closed, as for GEMM peers
  if (!handle) return {nullptr, dlerror()};
  using Make = ModelPeer* (*)(const char*);
  auto make = reinterpret_cast<Make>(dlsym(handle, "dietcode_make_model_peer"));
  if (!make) return {nullptr, dlerror()};
  try {
    std::unique_ptr<ModelPeer> peer(make(variant));
    if (!peer) return {nullptr, path + " has no variant " + variant};
    return {std::move(peer), ""};
  } catch (const std::exception& e) {
    return {nullptr, std::string("creating the peer failed: ") + e.what()};
  }
}

std::string default_ort_script() {
#ifdef DIETCODE_SOURCE_DIR
  return std::string(DIETCODE_SOURCE_DIR) + "/bench/peers/ort/bert_encoder.mjs";
#else
  return "bench/peers/ort/bert_encoder.mjs";
#endif
}

// Empty when ONNX Runtime can run, else why not.
std::string ort_unavailable(const std::string& script) {
  if (!fs::exists(script)) return "no script " + script;
  if (!fs::exists(fs::path(script).parent_path() / "node_modules" / "onnxruntime-node"))
    return "onnxruntime-node is not installed (npm ci --prefix " +
           fs::path(script).parent_path().string() + ")";
  if (std::system("command -v node >/dev/null 2>&1") != 0) return "node is not installed";
  return "";
}

void write_floats(const fs::path& path, std::span<const float> v) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(float)));
  if (!f) user_error("cannot write {}", path.string());
}

std::vector<float> read_floats(const fs::path& path, size_t count) {
  std::vector<float> v(count);
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(v.data()), std::streamsize(count * sizeof(float)));
  if (!f || f.gcount() != std::streamsize(count * sizeof(float)))
    throw std::runtime_error("cannot read " + std::to_string(count) + " floats from " +
                             path.string());
  return v;
}

// ONNX Runtime in a child process: the Node.js script in its --serve mode, its session
// made once; each request times one length. Its timings at T then sit between ours and
// libtorch's at T, seconds apart: run over every length at once, a minute from ours, they
// met another speed of a shared VM that drifts by 30-50% over seconds to minutes (the
// stop-57 main job had twelve layers at T = 128 in 197 ms for us, 142 at T = 127).
// Errors throw std::runtime_error with the script's error output.
class OrtServer {
 public:
  OrtServer(const std::string& script, const std::string& weights, const model::BertConfig& c,
            int threads, const std::string& graph, const fs::path& io,
            const std::vector<int64_t>& lengths)
      : err_(io / ("ort-" + graph + ".err")) {
    const std::string command = fmt::format(
        "exec node '{}' --weights '{}' --layers {} --heads {} --eps {} --threads {} --graph {} "
        "--io '{}' --lengths {} --serve 2> '{}'",
        script, weights, c.layers, c.heads, c.eps, threads, graph, io.string(),
        fmt::join(lengths, ","), err_.string());
    int to_child[2], from_child[2];
    if (::pipe2(to_child, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    if (::pipe2(from_child, O_CLOEXEC) != 0) {
      ::close(to_child[0]);
      ::close(to_child[1]);
      throw std::runtime_error("pipe2 failed");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
    const char* argv[] = {"sh", "-c", command.c_str(), nullptr};
    const int spawned =
        posix_spawn(&pid_, "/bin/sh", &actions, nullptr, const_cast<char* const*>(argv), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(to_child[0]);
    ::close(from_child[1]);
    if (spawned != 0) {
      ::close(to_child[1]);
      ::close(from_child[0]);
      throw std::runtime_error(fmt::format("cannot run node: {}", std::strerror(spawned)));
    }
    to_ = to_child[1];
    from_ = ::fdopen(from_child[0], "r");
    try {
      session_ = read_line();
    } catch (...) {
      stop();
      throw;
    }
  }
  ~OrtServer() { stop(); }
  OrtServer(const OrtServer&) = delete;
  OrtServer& operator=(const OrtServer&) = delete;

  const nlohmann::json& session() const { return session_; }
  pid_t pid() const { return pid_; }
  bool failed() const { return failed_; }  // it stopped answering: asked nothing more

  // Times length t `repeat` times: the script's JSON line (its output written to io).
  nlohmann::json time(int64_t t, int repeat) {
    const std::string request = fmt::format("{} {}\n", t, repeat);
    size_t done = 0;
    while (done < request.size()) {
      const ssize_t n = ::write(to_, request.data() + done, request.size() - done);
      if (n <= 0) fail();
      done += size_t(n);
    }
    return read_line();
  }

 private:
  nlohmann::json read_line() {
    std::string line;
    char buf[4096];
    while (std::fgets(buf, sizeof buf, from_)) {
      line += buf;
      if (line.back() == '\n') break;
    }
    if (line.empty() || line.back() != '\n') fail();
    return nlohmann::json::parse(line);
  }
  // End of input (the script releases its session and exits), then waits for it.
  void stop() {
    if (to_ >= 0) ::close(to_);
    to_ = -1;
    if (from_) std::fclose(from_);
    from_ = nullptr;
    if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  // The child stopped answering: its exit status and error output.
  [[noreturn]] void fail() {
    failed_ = true;
    ::close(to_);
    to_ = -1;
    int status = 0;
    if (::waitpid(pid_, &status, 0) == pid_) pid_ = -1;
    std::ifstream e(err_);
    std::string text((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
    throw std::runtime_error(
        fmt::format("exit status {}: {}", WIFEXITED(status) ? WEXITSTATUS(status) : -1, text));
  }

  fs::path err_;
  pid_t pid_ = -1;
  int to_ = -1;
  FILE* from_ = nullptr;
  bool failed_ = false;
  nlohmann::json session_;
};

void check_options(const EncoderBenchOptions& o) {
  if (o.lengths.empty()) user_error("--M: no sequence lengths");
  for (int64_t t : o.lengths)
    if (t < 1) user_error("--M {}: expected sequence lengths >= 1", t);
  if (o.layers.empty()) user_error("--layers: none given");
  for (int64_t l : o.layers)
    if (l < 1) user_error("--layers {}: expected >= 1", l);
  for (int n : o.threads)
    if (n < 1) user_error("--threads {}: expected >= 1", n);
  if (o.repeat < 1) user_error("--repeat {}: expected >= 1", o.repeat);
  if (o.rounds < 1) user_error("--rounds {}: expected >= 1", o.rounds);
  for (const std::string& e : o.engines)
    if (e != "libtorch" && e != "onnxruntime" && e != "none")
      user_error("--peers {}: the encoder's peers are libtorch and onnxruntime (or none)", e);
  // Output paths are checked before minutes of measurement, not after.
  if (!o.plot_path.empty()) check_plot_path(o.plot_path);
  if (!o.csv_path.empty() && !std::ofstream(o.csv_path, std::ios::app))
    user_error("--csv {}: cannot open the file for writing", o.csv_path);
}

bool wanted(const EncoderBenchOptions& o, const std::string& engine) {
  return o.engines.empty() ||
         std::find(o.engines.begin(), o.engines.end(), engine) != o.engines.end();
}

// The weights: given, or random ones of the model directory's sizes.
std::string resolve_weights(const EncoderBenchOptions& o, int64_t layers) {
  return o.weights.empty() ? random_model_weights(o.model_dir, layers, o.quiet) : o.weights;
}

}  // namespace

std::string random_model_weights(const std::string& model_dir, int64_t layers, bool quiet) {
  const fs::path qkv = fs::path(model_dir) / "qkv.module.json";
  const fs::path ffn1 = fs::path(model_dir) / "ffn1.module.json";
  const fs::path att = fs::path(model_dir) / "attention.module.json";
  for (const fs::path& p : {qkv, ffn1, att})
    if (!fs::exists(p))
      user_error("{}: missing; `dietcode tune bert-base --out {}` writes the model directory",
                 p.string(), model_dir);
  model::BertShape shape;
  shape.layers = layers;
  shape.hidden = runtime::load_module_spec(qkv.string()).op.k;
  shape.ffn = runtime::load_module_spec(ffn1.string()).op.n;
  shape.heads = runtime::load_module_spec(att.string()).op.n;
  const std::string path =
      (fs::path(model_dir) / fmt::format("random-{}-layers.safetensors", layers)).string();
  if (!fs::exists(path)) {
    if (!quiet) fmt::print(stderr, "writing random weights (seed 1) to {}\n", path);
    model::write_random_bert_weights(path, shape, 1);
  }
  return path;
}

EncoderBenchResult run_encoder_bench(const EncoderBenchOptions& o) {
  check_options(o);
  EncoderBenchResult r;
  auto note = [&](std::string text) {
    if (!o.quiet) fmt::print(stderr, "note: {}\n", text);
    r.notes.push_back(std::move(text));
  };
  bool busy_noted = false;  // an engine's threads still busy 2 s after its calls: noted once
  const int64_t max_layers = *std::max_element(o.layers.begin(), o.layers.end());

  const std::string weights = resolve_weights(o, max_layers);
  model::Safetensors file = model::Safetensors::open(weights);
  std::map<std::string, WeightView> views;
  for (const auto& [name, info] : file.tensors()) views[name] = {info.data, info.shape};

  // libtorch eager and TorchScript (frozen), one plugin.
  std::vector<std::unique_ptr<ModelPeer>> torch;
  if (wanted(o, "libtorch")) {
    for (const char* variant : {"eager", "script"}) {
      LoadedModelPeer p = load_model_peer(o.peers_dir.empty() ? default_peers_dir() : o.peers_dir,
                                          "torch", variant);
      if (p.peer) {
        torch.push_back(std::move(p.peer));
      } else {
        note(fmt::format("libtorch ({}): skipped: {}", variant, p.why_not));
      }
    }
  }
  const std::string script = o.ort_script.empty() ? default_ort_script() : o.ort_script;
  std::string ort_why = wanted(o, "onnxruntime") ? ort_unavailable(script) : "not asked for";
  if (!ort_why.empty() && wanted(o, "onnxruntime")) note("onnxruntime: skipped: " + ort_why);

  // Inputs (one per length, the same for every engine) in a folder the ORT script reads.
  const fs::path io = fs::temp_directory_path() / fmt::format("dietcode-encoder-{}", ::getpid());
  fs::create_directories(io);
  struct RemoveAtExit {
    fs::path p;
    ~RemoveAtExit() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } cleanup{io};
  // A request written to an ONNX Runtime process that died fails with EPIPE (OrtServer
  // reports it) instead of a signal ending this one; restored when the bench returns.
  struct IgnoreSigpipe {
    void (*old)(int) = std::signal(SIGPIPE, SIG_IGN);
    ~IgnoreSigpipe() { std::signal(SIGPIPE, old); }
  } ignore_sigpipe;

  for (int threads : o.threads) {
    runtime::ThreadPool::global().set_num_threads(threads);
    for (auto& peer : torch) peer->set_threads(threads);
    Roofline roof = measure_roofline(threads, codegen::host_target().isa);
    for (int64_t layers : o.layers) {
      model::ModelOptions mo;
      mo.layers = layers;
      model::Model m = model::Model::load(o.model_dir, weights, mo);
      const model::BertConfig& c = m.config();
      // Which kind of load this was: the first in a model directory compiles every kernel,
      // later ones (or one after `dietcode refine`) find them in its code cache.
      note(fmt::format(
          "{} layers, {} threads: dietcode load {} + {:.2f} s (weights mapped, packed)", layers,
          threads, m.load_times().describe_modules(), m.load_times().weights_seconds));
      const double weight_bytes =
          4.0 * double(layers) * double(4 * c.hidden * c.hidden + 2 * c.hidden * c.ffn);
      // A layer's 28 MB re-read warm partly stay in caches a guest may not see: the level
      // is a read loop over that footprint (Roofline::level_for). Its rate is the fastest
      // of a loop before the rounds and one after each (Roofline::remeasure).
      std::vector<double> read_gbps = {roof.level_for(weight_bytes).gbps};
      // Likewise the FMA peak: the fastest so far (this thread count's earlier
      // configurations' probes too), then a probe after each round.
      std::vector<double> peaks = {roof.peak_gflops};
      std::vector<ModelPeer*> loaded;  // the libtorch peers that took these weights
      for (auto& peer : torch) {
        try {
          auto start = Clock::now();
          EncoderConfig ec{layers, c.hidden, c.heads, c.ffn, c.eps};
          peer->load(ec, views);
          note(fmt::format("{} {}: weights loaded in {:.2f} s", peer->name(), peer->version(),
                           1e-3 * ms_since(start)));
          loaded.push_back(peer.get());
        } catch (const std::exception& e) {
          note(fmt::format("{}: skipped: {}", peer->name(), e.what()));
        }
      }
      // The inputs (one per length, the same for every engine).
      std::map<int64_t, runtime::AlignedVector<float>> inputs, ours;  // ours: round 1's output
      for (int64_t t : o.lengths) {
        std::mt19937_64 rng{uint64_t(t)};
        std::normal_distribution<float> dist(0.0f, 1.0f);
        // Cache-line aligned, as a framework's tensors are (and as the model's own buffers).
        runtime::AlignedVector<float>& x = inputs[t];
        x.resize(t * c.hidden);
        for (float& e : x) e = dist(rng);
        write_floats(io / fmt::format("input-{}.bin", t), x);
      }
      // Every engine's measurements at T, one per round.
      std::map<std::pair<int64_t, std::string>, std::vector<EncoderMeasurement>> runs;
      // Each peer's median at T in the first round (none where it failed there).
      std::map<std::pair<int64_t, std::string>, double> first_round;
      auto add = [&](int round, int64_t t, const std::string& engine, EncoderMeasurement e,
                     double diff) {
        e.diff = diff;
        if (round == 0 && engine != "dietcode") first_round[{t, engine}] = e.median_ms;
        runs[{t, engine}].push_back(e);
      };
      const int per_round = std::max(1, (o.repeat + o.rounds - 1) / o.rounds);
      // The first round's median of a peer at T, if it was kFarBehind the fastest peer's.
      std::map<std::string, std::set<int64_t>> trimmed;  // peer -> lengths timed once later
      auto far_behind = [&](int64_t t, const std::string& engine) -> std::optional<double> {
        auto own = first_round.find({t, engine});
        if (own == first_round.end()) return std::nullopt;  // no first round to judge by
        double fastest = std::numeric_limits<double>::infinity();
        for (const auto& [key, ms] : first_round)
          if (key.first == t) fastest = std::min(fastest, ms);
        if (own->second >= kFarBehind * fastest) return own->second;
        return std::nullopt;
      };
      // A peer's timed calls at T in this round, and its warm-up.
      auto calls_of = [&](int round, int64_t t, const std::string& engine) {
        std::optional<double> first = round > 0 ? far_behind(t, engine) : std::nullopt;
        if (!first) return std::pair{per_round, kEncoderWarmUpSeconds};
        trimmed[engine].insert(t);
        return std::pair{1, *first > kLongCallMs ? 0.0 : kEncoderWarmUpSeconds};
      };
      // ONNX Runtime's two graphs, each a session in a child process for all the rounds.
      std::vector<std::pair<std::string, std::unique_ptr<OrtServer>>> ort;
      std::vector<pid_t> ort_pids;
      if (ort_why.empty())
        for (const char* graph : {"standard", "fused"}) {
          if (!o.quiet)
            fmt::print(stderr, "onnxruntime ({} graph): creating the session...\n", graph);
          try {
            auto server =
                std::make_unique<OrtServer>(script, weights, c, threads, graph, io, o.lengths);
            note(fmt::format("onnxruntime {} ({} graph): session created in {:.2f} s",
                             server->session().value("version", "?"), graph,
                             1e-3 * server->session().value("session_ms", 0.0)));
            ort_pids.push_back(server->pid());
            ort.emplace_back(graph, std::move(server));
          } catch (const std::exception& e) {
            note(fmt::format("onnxruntime ({} graph): skipped: {}", graph, e.what()));
          }
        }
      // Before an engine is timed, the threads of the one before have gone idle: ours,
      // a BLAS's busy-waiting workers, ONNX Runtime's in its process.
      auto settle_all = [&] {
        if (!wait_for_idle_threads(0.1, 2.0, ort_pids).quiet && !busy_noted) {
          busy_noted = true;
          note(
              "another thread of this process or of ONNX Runtime's was still running 2 s after "
              "an engine's calls; timings beside it share the cores");
        }
      };
      // One round: length by length, every engine at T back to back, in one order, then
      // the reverse in the next round (lengths and engines).
      auto round_of = [&](int round) {
        const bool reversed = round % 2 == 1;
        std::vector<int64_t> lengths = o.lengths;
        if (reversed) std::reverse(lengths.begin(), lengths.end());
        for (size_t ti = 0; ti < lengths.size(); ++ti) {
          const int64_t t = lengths[ti];
          const runtime::AlignedVector<float>& x = inputs.at(t);
          runtime::AlignedVector<float> y(x.size()), peer_y(x.size());
          std::vector<std::function<void()>> engines;
          engines.push_back([&] {
            settle_all();
            add(round, t, "dietcode",
                time_calls(per_round, [&] { m.forward(x.data(), t, y.data()); }), 0);
            if (round > 0) return;
            ours[t] = y;
            if (layers * t <= 24) {  // cheap enough: ours against the float64 encoder too
              double err =
                  reference::relative_error(y.data(), model::bert_reference(file, c, x.data(), t));
              note(fmt::format("{} layers, T = {}: dietcode vs float64 relative error {:.1e}",
                               layers, t, err));
            }
          });
          for (ModelPeer* peer : loaded)
            engines.push_back([&, peer] {
              settle_all();
              auto [calls, warm] = calls_of(round, t, peer->name());
              try {
                EncoderMeasurement e = time_calls(
                    calls, [&] { peer->forward(x.data(), t, peer_y.data()); }, warm);
                add(round, t, peer->name(), e, relative_difference(peer_y, ours.at(t)));
              } catch (const std::exception& e) {
                if (round == 0) note(fmt::format("{} T = {}: {}", peer->name(), t, e.what()));
              }
            });
          for (auto& [graph, server] : ort)
            engines.push_back([&, graph = graph, server = server.get()] {
              if (server->failed()) return;  // noted when it failed
              settle_all();
              try {
                // (The script warms up on its own.)
                const nlohmann::json j =
                    server->time(t, calls_of(round, t, "onnxruntime-" + graph).first);
                std::vector<float> out = read_floats(
                    io / fmt::format("ort-{}-output-{}.bin", graph, t), size_t(t * c.hidden));
                EncoderMeasurement e;
                e.median_ms = j.at("median_ms").get<double>();
                e.best_ms = j.at("best_ms").get<double>();
                e.worst_ms = j.at("worst_ms").get<double>();
                add(round, t, "onnxruntime-" + graph, e, relative_difference(out, ours.at(t)));
              } catch (const std::exception& e) {
                note(fmt::format("onnxruntime ({} graph) T = {}: {}", graph, t, e.what()));
              }
            });
          if (reversed) std::reverse(engines.begin(), engines.end());
          for (const auto& engine : engines) engine();
          if (!o.quiet)
            fmt::print(stderr, "\r{} layers, {} threads, round {} of {}: T = {} ({} of {})   ",
                       layers, threads, round + 1, o.rounds, t, ti + 1, lengths.size());
        }
        if (!o.quiet) fmt::print(stderr, "\n");
      };
      // The rounds run one after another. Within a round each length's engines run back to
      // back, so that an engine's ratio at T compares timings seconds apart; the order
      // reverses from round to round, so that no engine is always the one timed first
      // after another's calls, or at a length first met (the main job's table once had our
      // 12 layers at T = 1 in 12.7 ms, 9.0-10.2 ms in five runs of `dietcode run` minutes
      // later, while ONNX Runtime went the other way).
      for (int round = 0; round < o.rounds; ++round) {
        round_of(round);
        read_gbps.push_back(roof.remeasure(weight_bytes));
        peaks.push_back(roof.remeasure_peak());
      }
      for (const auto& [peer, at] : trimmed)
        note(
            fmt::format("{} layers, {} threads: {} at {} of {} lengths at least {:g}x the "
                        "fastest peer's time in the first round, one call per later round there",
                        layers, threads, peer, at.size(), o.lengths.size(), kFarBehind));
      ort.clear();  // the sessions end before the next configuration's are made
      // Each length's roofline: its FLOPs at the FMA peak, or the weights at the read rate.
      const MemoryLevel level = roof.level_for(weight_bytes);
      note(fmt::format(
          "{} layers, {} threads: roofline: FMA peak {:.1f} GFLOP/s (the fastest probe so far: "
          "{:.1f} before these rounds, then after each: {:.1f}); weights {:.0f} MB read at "
          "{:.1f} GB/s ({}; the fastest of {} read loops, one before the rounds and one after "
          "each: {:.1f} GB/s)",
          layers, threads, roof.peak_gflops, peaks.front(),
          fmt::join(peaks.begin() + 1, peaks.end(), ", "), weight_bytes * 1e-6, level.gbps,
          level.name == "DRAM" ? "DRAM" : "a read loop over " + level.name + " re-read warm",
          read_gbps.size(), fmt::join(read_gbps, ", ")));
      std::map<int64_t, double> roofline_ms;
      for (int64_t t : o.lengths)
        roofline_ms[t] = 1e3 * std::max(m.graph().flops(t) / (roof.peak_gflops * 1e9),
                                        weight_bytes / (level.gbps * 1e9));
      // An engine's latency at T: the median of its rounds' medians; the best and worst
      // single calls; the largest difference from our output.
      for (auto& [key, v] : runs) {
        std::vector<double> round_ms;
        for (const EncoderMeasurement& run : v) round_ms.push_back(run.median_ms);
        std::sort(v.begin(), v.end(),
                  [](const auto& a, const auto& b) { return a.median_ms < b.median_ms; });
        EncoderMeasurement e;
        e.layers = layers;
        e.threads = threads;
        e.t = key.first;
        e.engine = key.second;
        e.roofline_ms = roofline_ms.at(e.t);
        e.median_ms = v.size() % 2
                          ? v[v.size() / 2].median_ms
                          : 0.5 * (v[v.size() / 2 - 1].median_ms + v[v.size() / 2].median_ms);
        e.round_ms = std::move(round_ms);
        e.best_ms = INFINITY;
        for (const EncoderMeasurement& run : v) {
          e.best_ms = std::min(e.best_ms, run.best_ms);
          e.worst_ms = std::max(e.worst_ms, run.worst_ms);
          e.diff = std::max(e.diff, run.diff);
        }
        r.rows.push_back(e);
      }
    }
  }
  return r;
}

std::string format_encoder_table(const EncoderBenchResult& r) {
  std::string out;
  std::set<std::pair<int, int64_t>> groups;
  for (const EncoderMeasurement& m : r.rows) groups.insert({m.threads, m.layers});
  const std::vector<std::string> engines = {"dietcode", "libtorch", "libtorch-script",
                                            "onnxruntime-standard", "onnxruntime-fused"};
  for (const auto& [threads, layers] : groups) {
    std::map<int64_t, std::map<std::string, const EncoderMeasurement*>> by_t;
    size_t rounds = 1;
    for (const EncoderMeasurement& m : r.rows)
      if (m.threads == threads && m.layers == layers) {
        by_t[m.t][m.engine] = &m;
        rounds = std::max(rounds, m.round_ms.size());
      }
    out += fmt::format(
        "\nBERT encoder, {} layer{}, {} thread{}: latency in ms, the median of {} round{} "
        "(the slowest round in brackets); ratio = best peer / dietcode (> 1: dietcode faster)\n",
        layers, layers == 1 ? "" : "s", threads, threads == 1 ? "" : "s", rounds,
        rounds == 1 ? "" : "s");
    out += fmt::format("{:>5} {:>17} {:>17} {:>17} {:>17} {:>17} {:>6} {:>9} {:>6} {:>9}\n", "T",
                       "dietcode", "libtorch", "torchscript", "ort-standard", "ort-fused", "ratio",
                       "roofline", "%roof", "max diff");
    double log_sum = 0, min_ratio = INFINITY;
    int counted = 0;
    // Our share of each length's roofline, capped at 100% (data the guest's hidden caches
    // hold, or a read loop slowed by a neighbour, can put the ceiling below our time).
    double log_roof = 0, min_roof = INFINITY;
    int roofs = 0, capped = 0;
    for (const auto& [t, row] : by_t) {
      out += fmt::format("{:>5}", t);
      for (const std::string& e : engines) {
        auto it = row.find(e);
        out += it == row.end()
                   ? fmt::format(" {:>17}", "-")
                   : fmt::format(" {:>17}", fmt::format("{:.3f} [{:.3f}]", it->second->median_ms,
                                                        slowest_round(*it->second)));
      }
      const EncoderMeasurement* ours = row.count("dietcode") ? row.at("dietcode") : nullptr;
      double best_peer = INFINITY, diff = 0;
      for (const auto& [e, m] : row)
        if (e != "dietcode") {
          best_peer = std::min(best_peer, m->median_ms);
          diff = std::max(diff, m->diff);
        }
      if (ours && std::isfinite(best_peer)) {
        const double ratio = best_peer / ours->median_ms;
        log_sum += std::log(ratio);
        min_ratio = std::min(min_ratio, ratio);
        ++counted;
        out += fmt::format(" {:>6.2f}", ratio);
      } else {
        out += fmt::format(" {:>6}", "-");
      }
      if (ours) {
        const double roof = ours->roofline_ms / ours->median_ms;
        out += fmt::format(" {:>9.3f} {:>5.0f}% {:>9.1e}\n", ours->roofline_ms, 100 * roof, diff);
        if (roof > 0) {
          capped += roof > 1;
          log_roof += std::log(std::min(roof, 1.0));
          min_roof = std::min(min_roof, roof);
          ++roofs;
        }
      } else {
        out += "\n";
      }
    }
    if (counted)
      out += fmt::format("geomean ratio to the best peer {:.2f} (min {:.2f}) over {} lengths\n",
                         std::exp(log_sum / counted), min_ratio, counted);
    if (roofs)
      out += fmt::format(
          "geomean share of the roofline {:.0f}% (min {:.0f}%) over {} lengths, each at most "
          "100% ({} above)\n",
          100 * std::exp(log_roof / roofs), 100 * min_roof, roofs, capped);
    // The same ratio round by round (each engine's median in that round), where every
    // engine has every round: how far one window's verdict can stray.
    std::vector<std::string> per_round;
    for (size_t i = 0; i < rounds && rounds > 1; ++i) {
      double sum = 0;
      int n = 0;
      for (const auto& [t, row] : by_t) {
        auto ours = row.find("dietcode");
        if (ours == row.end() || ours->second->round_ms.size() != rounds) continue;
        double best_peer = INFINITY;
        for (const auto& [e, m] : row)
          if (e != "dietcode" && m->round_ms.size() == rounds)
            best_peer = std::min(best_peer, m->round_ms[i]);
        if (!std::isfinite(best_peer)) continue;
        sum += std::log(best_peer / ours->second->round_ms[i]);
        ++n;
      }
      if (n) per_round.push_back(fmt::format("{:.2f}", std::exp(sum / n)));
    }
    if (per_round.size() == rounds)
      out += fmt::format("geomean ratio round by round: {}\n", fmt::join(per_round, ", "));
  }
  for (const std::string& n : r.notes) out += "note: " + n + "\n";
  return out;
}

void write_encoder_csv(const EncoderBenchResult& r, const std::string& path) {
  std::ofstream f(path);
  if (!f) user_error("--csv {}: cannot open the file for writing", path);
  f << "layers,threads,T,engine,median_ms,best_ms,worst_ms,max_rel_diff_vs_dietcode,roofline_ms,"
       "round_medians_ms\n";
  for (const EncoderMeasurement& m : r.rows)
    f << fmt::format("{},{},{},{},{:.4f},{:.4f},{:.4f},{:.3e},{:.4f},{:.4f}\n", m.layers, m.threads,
                     m.t, m.engine, m.median_ms, m.best_ms, m.worst_ms, m.diff, m.roofline_ms,
                     fmt::join(m.round_ms, " "));
}

void write_encoder_plot(const EncoderBenchResult& r, const std::string& path) {
  std::set<std::pair<int, int64_t>> groups;
  for (const EncoderMeasurement& m : r.rows) groups.insert({m.threads, m.layers});
  draw_plot(path, groups.size(), [&](const fs::path& dir) {
    std::string script = "set xlabel 'sequence length T'\nset ylabel 'latency (ms)'\n";
    int index = 0;
    for (const auto& [threads, layers] : groups) {
      script +=
          fmt::format("set title 'BERT encoder, {} layers, {} threads'\nplot ", layers, threads);
      std::map<std::string, std::vector<const EncoderMeasurement*>> series;
      for (const EncoderMeasurement& m : r.rows)
        if (m.threads == threads && m.layers == layers) series[m.engine].push_back(&m);
      std::vector<std::string> lines;
      for (const auto& [engine, rows] : series) {
        std::vector<std::array<double, 3>> points;
        for (const EncoderMeasurement* m : rows)
          points.push_back({double(m->t), m->median_ms, m->roofline_ms});
        lines.push_back(plot_line(dir, index, engine, points, engine == "dietcode"));
      }
      script += fmt::format("{}\n", fmt::join(lines, ", "));
    }
    return script;
  });
}

}  // namespace dietcode::bench
