#include "tune/measure.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "support/error.h"

extern char** environ;

namespace dietcode::tune {

namespace {

using Clock = std::chrono::steady_clock;

// One worker process and the pipes to it.
class WorkerProcess {
 public:
  enum class Read { Line, Timeout, Eof };

  WorkerProcess(const std::string& path, const nlohmann::json& init, bool allow_faults) {
    int to_child[2], from_child[2];
    if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0)
      user_error("cannot create pipes for a measurement worker: {}", std::strerror(errno));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
    std::vector<std::string> args = {path};
    if (allow_faults) args.push_back("--allow-faults");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int rc = posix_spawn(&pid_, path.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(to_child[0]);
    ::close(from_child[1]);
    to_ = to_child[1];
    from_ = from_child[0];
    if (rc != 0) {
      pid_ = -1;
      user_error("cannot start the measurement worker {}: {}", path, std::strerror(rc));
    }
    send(init);
  }
  ~WorkerProcess() { kill(); }

  bool send(const nlohmann::json& j) {
    std::string text = j.dump() + "\n";
    size_t done = 0;
    while (done < text.size()) {
      ssize_t n = ::write(to_, text.data() + done, text.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        return false;  // EPIPE: the worker is gone; the read reports how
      }
      done += static_cast<size_t>(n);
    }
    return true;
  }

  Read read_line(double timeout_seconds, std::string& line) {
    auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(timeout_seconds));
    for (;;) {
      size_t nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return Read::Line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return Read::Timeout;
      pollfd p{from_, POLLIN, 0};
      int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
      if (r < 0 && errno != EINTR) return Read::Eof;
      if (r <= 0) continue;
      char chunk[4096];
      ssize_t n = ::read(from_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Read::Eof;
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

  // Kills the worker (if alive) and says how it ended. A worker whose pipe closed is
  // dying already (an abort may still be writing its core): it gets `grace` seconds
  // to exit on its own, so the report names the signal instead of our kill.
  std::string kill(double grace = 0) {
    if (pid_ < 0) return "not running";
    if (to_ >= 0) ::close(to_);
    if (from_ >= 0) ::close(from_);
    to_ = from_ = -1;
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    for (auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(grace));
         r == 0 && Clock::now() < until; r = ::waitpid(pid_, &status, WNOHANG))
      ::usleep(2000);
    std::string how;
    if (r == 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      how = "was killed (it had not exited)";
    } else if (r == pid_ && WIFSIGNALED(status)) {
      how = fmt::format("died of signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
    } else if (r == pid_ && WIFEXITED(status)) {
      how = fmt::format("exited with status {}", WEXITSTATUS(status));
    } else {
      how = "ended";
    }
    pid_ = -1;
    return how;
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buffer_;
};

// A worker's reply for one timed kernel into a result.
void read_timing(const nlohmann::json& r, MeasureResult& out) {
  out.seconds = r.value("seconds", 0.0);
  out.gflops = r.value("gflops", 0.0);
  out.max_rel_err = r.value("max_rel_err", 0.0);
  out.timing.min_seconds = r.value("min_seconds", out.seconds);
  out.timing.median_seconds = r.value("median_seconds", out.seconds);
  out.timing.spread = r.value("spread", 0.0);
  out.timing.attempts = r.value("attempts", 1);
  out.timing.disturbed = r.value("disturbed", false);
  out.timing.bursts = r.value("bursts", 0);
}

}  // namespace

std::string default_worker_path() {
  if (const char* env = std::getenv("DIETCODE_WORKER")) return env;
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "dietcode-worker" : (exe.parent_path() / "dietcode-worker").string();
}

struct Measurer::Impl {
  ops::OperatorSpec op;
  MeasureOptions o;
  nlohmann::json init;
  std::vector<std::unique_ptr<WorkerProcess>> workers;
  std::vector<int> generation;  // per worker slot: bumped on every restart
  // Kernels compiled in worker 0 for side-by-side measurement: id and the generation
  // of the worker that holds them.
  std::unordered_map<schedule::AnySchedule, std::pair<int64_t, int>, schedule::AnyScheduleHash>
      side_by_side;
  int64_t next_side_id = int64_t(1) << 40;  // apart from measure()'s batch indices
  // The workers' object cache (codegen/llvm/object_cache.h), a temporary directory this
  // Measurer removes: a kernel compiled in one worker during the search is loaded, not
  // compiled again, when a worker meets it in the finals (1000 trials: ~70 finalists,
  // 3 s of code generation). Empty when no directory could be made.
  std::string object_dir;
  ~Impl() {
    workers.clear();  // before their cache goes
    std::error_code ec;
    if (!object_dir.empty()) std::filesystem::remove_all(object_dir, ec);
  }

  WorkerProcess& worker(int w) {
    if (!workers[w])
      workers[w] = std::make_unique<WorkerProcess>(o.worker_path, init, o.allow_faults);
    return *workers[w];
  }
  std::string restart(int w, double grace = 0) {
    std::string how = workers[w] ? workers[w]->kill(grace) : "not running";
    workers[w].reset();
    ++generation[w];
    return how;
  }

  // Sends a request and waits for its reply; on timeout or a dead worker, returns a
  // reply with "error" set and restarts the worker.
  nlohmann::json call(int w, const nlohmann::json& request, double timeout, const char* phase) {
    WorkerProcess& p = worker(w);
    p.send(request);
    return await(w, timeout, phase);
  }

  nlohmann::json await(int w, double timeout, const char* phase) {
    std::string line;
    switch (workers[w]->read_line(timeout, line)) {
      case WorkerProcess::Read::Line: {
        nlohmann::json reply = nlohmann::json::parse(line, nullptr, false);
        if (reply.is_discarded() || !reply.is_object()) {
          std::string how = restart(w);
          return {{"error", fmt::format("worker sent a malformed reply while {} ({}): {}", phase,
                                        how, line.substr(0, 200))}};
        }
        return reply;
      }
      case WorkerProcess::Read::Timeout: {
        restart(w);
        return {{"error",
                 fmt::format("timed out after {:.0f} s while {}; worker killed", timeout, phase)}};
      }
      case WorkerProcess::Read::Eof:
      default: {
        std::string how = restart(w, /*grace=*/5.0);
        return {{"error", fmt::format("the worker {} while {}", how, phase)}};
      }
    }
  }
};

namespace {

// The workers' object caches: DIR/dietcode-objects-PID-XXXXXX, PID the tuning process.
constexpr const char* kObjectDirPrefix = "dietcode-objects-";

// A tuning process killed (SIGKILL, Ctrl-C) never runs the destructor that removes its
// object cache: the next Measurer removes those left by processes that are gone, once
// nothing has been written to them for an hour (a process of the same number in another
// PID namespace that shares the directory is not taken for gone while it writes).
void remove_orphaned_object_dirs() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  if (ec) return;
  const std::string prefix = kObjectDirPrefix;
  const auto stale = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (fs::directory_iterator it(tmp, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const size_t dash = name.find('-', prefix.size());
    if (dash == std::string::npos) continue;  // no PID in the name: not ours to judge
    pid_t pid = 0;
    const char* first = name.data() + prefix.size();
    const char* last = name.data() + dash;
    if (std::from_chars(first, last, pid).ptr != last) continue;
    std::error_code e;
    if (pid <= 0 || !(::kill(pid, 0) != 0 && errno == ESRCH)) continue;
    if (!it->is_directory(e) || fs::last_write_time(it->path(), e) > stale || e) continue;
    fs::remove_all(it->path(), e);
  }
}

}  // namespace

Measurer::Measurer(const ops::OperatorSpec& op, const MeasureOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->op = op;
  impl_->o = options;
  if (impl_->o.workers < 1) impl_->o.workers = 1;
  if (!std::filesystem::exists(options.worker_path))
    user_error(
        "measurement worker {} not found (set DIETCODE_WORKER or install dietcode-worker "
        "beside dietcode)",
        options.worker_path);
  // A worker that dies makes writes to its pipe raise SIGPIPE; the read that follows
  // reports the death instead.
  ::signal(SIGPIPE, SIG_IGN);
  remove_orphaned_object_dirs();
  std::string object_dir = (std::filesystem::temp_directory_path() /
                            fmt::format("{}{}-XXXXXX", kObjectDirPrefix, ::getpid()))
                               .string();
  if (::mkdtemp(object_dir.data())) impl_->object_dir = object_dir;
  impl_->init = {{"operator", ops::to_json(op)},
                 {"object_cache_dir", impl_->object_dir},
                 {"threads", options.threads},
                 {"seconds_per_repeat", options.seconds_per_repeat},
                 {"side_by_side_seconds_per_repeat", options.side_by_side_seconds_per_repeat},
                 {"warmup_seconds", options.warmup_seconds},
                 {"repeats", options.repeats},
                 {"tolerance", options.tolerance},
                 {"estimator", options.estimator == Estimator::Min ? "min" : "median"},
                 {"disturbed_spread", options.disturbed_spread},
                 {"max_attempts", options.max_attempts},
                 {"race_margin", options.race_margin},
                 {"cold_weights", options.cold_weights}};
  impl_->workers.resize(impl_->o.workers);
  impl_->generation.assign(impl_->o.workers, 0);
}

Measurer::~Measurer() = default;

std::vector<MeasureResult> Measurer::measure(
    const std::vector<MeasureRequest>& batch,
    const std::function<void(size_t, const MeasureResult&)>& on_result) {
  Impl& m = *impl_;
  const int W = m.o.workers;
  std::vector<MeasureResult> results(batch.size());
  std::vector<bool> done(batch.size(), false);
  auto finish = [&](size_t i) {
    done[i] = true;
    if (on_result) on_result(i, results[i]);
  };
  auto compile_request = [&](size_t i) {
    return nlohmann::json{
        {"cmd", "compile"}, {"id", i}, {"schedule", schedule::to_json(batch[i].schedule)}};
  };
  std::vector<int> compiled_in(batch.size(), -1);  // worker generation holding the kernel
  auto read_compile = [&](int w, size_t i) {
    nlohmann::json r = m.await(w, m.o.compile_timeout, "compiling");
    if (r.contains("error")) {
      results[i].error = r["error"].get<std::string>();
      finish(i);
      return false;
    }
    if (r.value("id", int64_t(-1)) != int64_t(i)) {
      results[i].error = "worker replied out of order while compiling";
      m.restart(w);
      finish(i);
      return false;
    }
    results[i].compile_seconds = r.value("compile_seconds", 0.0);
    compiled_in[i] = m.generation[w];
    return true;
  };
  // Phase 1: every worker compiles its share, all at once.
  std::vector<std::deque<size_t>> pending(W);
  for (size_t i = 0; i < batch.size(); ++i) pending[i % W].push_back(i);
  std::vector<std::vector<size_t>> compiled(W);
  for (int w = 0; w < W; ++w)
    for (size_t i : pending[w]) m.worker(w).send(compile_request(i));
  for (int w = 0; w < W; ++w) {
    while (!pending[w].empty()) {
      size_t i = pending[w].front();
      pending[w].pop_front();
      bool alive = m.workers[w] != nullptr;
      if (alive && read_compile(w, i)) {
        compiled[w].push_back(i);
      } else if (!m.workers[w]) {
        // The worker died or hung on kernel i; a fresh one compiles the rest (and the
        // ones compiled before, which died with it, are compiled again when measured).
        for (size_t j : pending[w]) m.worker(w).send(compile_request(j));
      }
    }
  }
  // Phase 2: one worker at a time times its kernels while the others wait, shape by
  // shape (a worker makes each shape's inputs and float64 reference values once and
  // keeps the last few). A kernel compiled by a worker that has since been restarted is
  // compiled again first.
  for (int w = 0; w < W; ++w) {
    std::stable_sort(compiled[w].begin(), compiled[w].end(),
                     [&](size_t a, size_t b) { return batch[a].shape < batch[b].shape; });
    for (size_t i : compiled[w]) {
      if (compiled_in[i] != m.generation[w]) {
        m.worker(w).send(compile_request(i));
        if (!read_compile(w, i)) continue;
      }
      nlohmann::json request = {{"cmd", "measure"}, {"id", i}, {"shape", batch[i].shape}};
      if (!batch[i].fault.empty()) request["fault"] = batch[i].fault;
      nlohmann::json r = m.call(w, request, m.o.measure_timeout, "measuring");
      if (r.contains("error")) {
        results[i].error = r["error"].get<std::string>();
      } else {
        read_timing(r, results[i]);
      }
      finish(i);
    }
  }
  for (size_t i = 0; i < batch.size(); ++i)
    if (!done[i]) {
      results[i].error = "not measured";
      finish(i);
    }
  return results;
}

std::vector<MeasureResult> Measurer::measure_side_by_side(
    const std::vector<schedule::AnySchedule>& kernels, const std::vector<int64_t>& shape,
    const std::string& fault) {
  Impl& m = *impl_;
  std::vector<MeasureResult> results(kernels.size());
  std::vector<size_t> ready;
  std::vector<int64_t> ids;
  for (size_t i = 0; i < kernels.size(); ++i) {
    auto it = m.side_by_side.find(kernels[i]);
    if (it == m.side_by_side.end() || it->second.second != m.generation[0] || !m.workers[0]) {
      int64_t id = m.next_side_id++;
      nlohmann::json r =
          m.call(0, {{"cmd", "compile"}, {"id", id}, {"schedule", schedule::to_json(kernels[i])}},
                 m.o.compile_timeout, "compiling");
      if (r.contains("error")) {
        results[i].error = r["error"].get<std::string>();
        continue;
      }
      results[i].compile_seconds = r.value("compile_seconds", 0.0);
      it = m.side_by_side.insert_or_assign(kernels[i], std::pair{id, m.generation[0]}).first;
    }
    ready.push_back(i);
    ids.push_back(it->second.first);
  }
  if (ready.empty()) return results;
  nlohmann::json request = {{"cmd", "measure_set"}, {"id", 0}, {"kernels", ids}, {"shape", shape}};
  if (!fault.empty()) request["fault"] = fault;
  nlohmann::json r =
      m.call(0, request, m.o.measure_timeout * double(ready.size()), "measuring side by side");
  if (r.contains("error") || !r.contains("results") || r["results"].size() != ready.size()) {
    std::string why =
        r.contains("error") ? r["error"].get<std::string>() : "worker sent no result per kernel";
    for (size_t i : ready) results[i].error = why;
    return results;
  }
  for (size_t j = 0; j < ready.size(); ++j) {
    const nlohmann::json& one = r["results"][j];
    if (one.contains("error"))
      results[ready[j]].error = one["error"].get<std::string>();
    else
      read_timing(one, results[ready[j]]);
  }
  return results;
}

}  // namespace dietcode::tune
