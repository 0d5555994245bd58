// The measurement worker process (see measure.h): compiles kernels and times them on
// request, checking each first run against the float64 reference.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "ops/contraction.h"
#include "reference/reference.h"
#include "runtime/kernel.h"
#include "runtime/thread_pool.h"
#include "support/error.h"
#include "tune/measure.h"

namespace dietcode::tune {

namespace {

using Clock = std::chrono::steady_clock;

// Random inputs of one shape and the reference values at sampled output elements.
struct ShapeData {
  std::vector<runtime::AlignedBuffer> inputs;
  int64_t output_size = 0;
  std::vector<int64_t> sample;  // flat output indices checked against the reference
  std::vector<double> want;
};

ShapeData make_data(const te::Operator& op, const std::vector<int64_t>& shape,
                    std::mt19937_64& rng) {
  ShapeData d;
  std::vector<int64_t> sizes = op.buffer_sizes(op.bind(shape));
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<const float*> pointers;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    d.inputs.emplace_back(sizes[i]);
    for (int64_t j = 0; j < sizes[i]; ++j) d.inputs.back()[j] = dist(rng);
    pointers.push_back(d.inputs.back().data());
  }
  d.output_size = sizes.back();
  // The first and last rows whole (edge tiles of every kind meet there), the first and
  // last column of random rows, and random elements. Every element is also checked for
  // having been written (the output is poisoned with NaN).
  ir::Bindings b = op.bind(shape);
  int64_t row = ir::evaluate_int(op.compute.output.shape().back(), b);
  int64_t rows = d.output_size / row;
  for (int64_t j = 0; j < row; ++j) {
    d.sample.push_back(j);
    d.sample.push_back((rows - 1) * row + j);
  }
  std::uniform_int_distribution<int64_t> any_row(0, rows - 1), any(0, d.output_size - 1);
  for (int i = 0; i < 32; ++i) {
    int64_t r = any_row(rng);
    d.sample.push_back(r * row);
    d.sample.push_back(r * row + row - 1);
  }
  for (int i = 0; i < 256; ++i) d.sample.push_back(any(rng));
  std::sort(d.sample.begin(), d.sample.end());
  d.sample.erase(std::unique(d.sample.begin(), d.sample.end()), d.sample.end());
  d.want = reference::evaluate_at(op, shape, pointers, d.sample);
  return d;
}

nlohmann::json measure_kernel(const runtime::Kernel& k, const std::vector<int64_t>& shape,
                              ShapeData& d, const nlohmann::json& init, const std::string& fault) {
  std::vector<runtime::ConstTensor> args;
  runtime::AlignedBuffer packed;
  for (size_t i = 0; i < d.inputs.size(); ++i) {
    if (k.needs_prepack() && int(i) == k.prepacked_input()) {
      packed = k.prepack(shape, {d.inputs[i].data(), d.inputs[i].size()});
      args.push_back({packed.data(), packed.size()});
    } else {
      args.push_back({d.inputs[i].data(), d.inputs[i].size()});
    }
  }
  runtime::AlignedBuffer out(d.output_size);
  std::fill(out.data(), out.data() + out.size(), std::numeric_limits<float>::quiet_NaN());
  runtime::MutableTensor y{out.data(), out.size()};
  k.run(shape, args, y);
  if (fault == "wrong") out[out.size() - 1] += 1.0f;
  for (int64_t i = 0; i < out.size(); ++i)
    if (!std::isfinite(out[i]))
      return {{"error", fmt::format("wrong result: output element {} of {} is {} (not written "
                                    "or not finite)",
                                    i, out.size(), out[i])}};
  double diff = 0, norm = 0;
  for (size_t s = 0; s < d.sample.size(); ++s) {
    double e = double(out[d.sample[s]]) - d.want[s];
    diff += e * e;
    norm += d.want[s] * d.want[s];
  }
  double rel = std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
  double tolerance = init.value("tolerance", 1e-4);
  if (!(rel <= tolerance))
    return {{"error", fmt::format("wrong result: relative error {:.3g} against the float64 "
                                  "reference (tolerance {:.1g})",
                                  rel, tolerance)},
            {"max_rel_err", rel}};
  // Warm-up sizes the bursts; then `repeats` bursts, the median per-call time.
  double per_repeat = init.value("seconds_per_repeat", 0.005);
  int repeats = std::max(1, init.value("repeats", 5));
  auto start = Clock::now();
  int64_t calls = 0;
  double elapsed = 0;
  do {
    k.run(shape, args, y);
    ++calls;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < per_repeat && calls < 100000);
  int64_t inner = std::max<int64_t>(1, int64_t(per_repeat / (elapsed / double(calls))));
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = Clock::now();
    for (int64_t i = 0; i < inner; ++i) k.run(shape, args, y);
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / double(inner));
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  double median = times[times.size() / 2];
  double flops = 0;
  {
    ir::Bindings b = k.op().bind(shape);
    ops::Contraction c = ops::match_contraction(k.op());
    flops = 2.0 * double(ir::evaluate_int(c.m_extent, b)) * double(ir::evaluate_int(c.n_extent, b)) *
            double(ir::evaluate_int(c.k_extent, b));
    for (const ir::Expr& e : c.batch_extents) flops *= double(ir::evaluate_int(e, b));
  }
  return {{"seconds", median}, {"gflops", flops / median * 1e-9}, {"max_rel_err", rel}};
}

void reply(const nlohmann::json& j) {
  std::string text = j.dump() + "\n";
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(1, text.data() + done, text.size() - done);
    if (n <= 0) std::_Exit(3);  // the parent is gone
    done += size_t(n);
  }
}

}  // namespace

int measure_worker_main(int argc, char** argv) {
  bool allow_faults = argc > 1 && std::string(argv[1]) == "--allow-faults";
  std::string line;
  if (!std::getline(std::cin, line)) return 2;
  nlohmann::json init = nlohmann::json::parse(line, nullptr, false);
  if (init.is_discarded()) return 2;
  te::Operator op;
  try {
    op = ops::operator_spec_from_json(init.at("operator")).build();
  } catch (const std::exception& e) {
    fmt::print(stderr, "dietcode-worker: bad init: {}\n", e.what());
    return 2;
  }
  runtime::ThreadPool::global().set_num_threads(init.value("threads", 1));
  std::map<int64_t, runtime::Kernel> kernels;
  std::map<std::vector<int64_t>, ShapeData> data;
  std::mt19937_64 rng(12345);
  while (std::getline(std::cin, line)) {
    nlohmann::json req = nlohmann::json::parse(line, nullptr, false);
    if (req.is_discarded() || !req.is_object()) return 2;
    int64_t id = req.value("id", int64_t(-1));
    std::string cmd = req.value("cmd", "");
    try {
      if (cmd == "compile") {
        schedule::MicroKernelSchedule s = schedule::schedule_from_json(req.at("schedule"));
        runtime::Kernel k = runtime::Kernel::compile(op, s);
        double seconds = k.compile_seconds();
        kernels.erase(id);
        kernels.emplace(id, std::move(k));
        reply({{"id", id}, {"compile_seconds", seconds}});
      } else if (cmd == "measure") {
        std::string fault = allow_faults ? req.value("fault", "") : "";
        if (fault == "crash") std::abort();
        if (fault == "hang")
          for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
        auto it = kernels.find(id);
        if (it == kernels.end()) {
          reply({{"id", id}, {"error", "kernel not compiled in this worker"}});
          continue;
        }
        std::vector<int64_t> shape = req.at("shape").get<std::vector<int64_t>>();
        if (data.size() > 16) data.clear();  // bounded memory across many shapes
        auto d = data.find(shape);
        if (d == data.end()) d = data.emplace(shape, make_data(op, shape, rng)).first;
        nlohmann::json r = measure_kernel(it->second, shape, d->second, init, fault);
        r["id"] = id;
        kernels.erase(it);
        reply(r);
      } else {
        reply({{"id", id}, {"error", "unknown command '" + cmd + "'"}});
      }
    } catch (const std::exception& e) {
      kernels.erase(id);
      reply({{"id", id}, {"error", e.what()}});
    }
  }
  return 0;
}

}  // namespace dietcode::tune
