// `dietcode verify` (after oneDNN's benchdnn): random valid micro-kernels x shapes;
// every generated kernel is checked against the float64 reference on fresh random
// inputs with the output poisoned (NaN) first. One line per failure, with the
// command that reproduces it, then "N passed, M failed".
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "codegen/llvm/target.h"
#include "reference/reference.h"
#include "runtime/kernel.h"
#include "runtime/thread_pool.h"
#include "schedule/random_schedule.h"
#include "support/error.h"
#include "tools/dietcode/operator_options.h"
#include "tools/dietcode/subcommands.h"

namespace dietcode::tool {

namespace {

struct VerifyOptions {
  OperatorOptions op;
  int schedules = 20;
  uint64_t seed = 1;
  int threads = 0;
  std::string schedule_json;
  std::string isa;
  double tolerance = 1e-5;
};

struct Case {
  std::vector<runtime::AlignedBuffer> inputs;
  std::vector<double> expected;
};

Case make_case(const te::Operator& op, const std::vector<int64_t>& shape, std::mt19937_64& rng) {
  Case c;
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<int64_t> sizes = op.buffer_sizes(op.bind(shape));
  std::vector<const float*> pointers;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    c.inputs.emplace_back(sizes[i]);
    for (int64_t j = 0; j < sizes[i]; ++j) c.inputs.back()[j] = dist(rng);
    pointers.push_back(c.inputs.back().data());
  }
  c.expected = reference::evaluate(op, shape, pointers);
  return c;
}

// Runs `kernel` on `c` with a poisoned output; returns the relative error (NaN if
// any output element is not finite, e.g. never written).
double run_case(const runtime::Kernel& kernel, const std::vector<int64_t>& shape, const Case& c) {
  std::vector<runtime::ConstTensor> args;
  runtime::AlignedBuffer packed;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (kernel.needs_prepack() && static_cast<int>(i) == kernel.prepacked_input()) {
      packed = kernel.prepack(shape, {c.inputs[i].data(), c.inputs[i].size()});
      args.push_back({packed.data(), packed.size()});
    } else {
      args.push_back({c.inputs[i].data(), c.inputs[i].size()});
    }
  }
  runtime::AlignedBuffer out(static_cast<int64_t>(c.expected.size()));
  for (int64_t i = 0; i < out.size(); ++i) out[i] = std::numeric_limits<float>::quiet_NaN();
  kernel.run(shape, args, {out.data(), out.size()});
  return reference::relative_error(out.data(), c.expected);
}

int run_verify(const VerifyOptions& o) {
  if (o.threads < 0) user_error("--threads {}: expected >= 1", o.threads);
  if (o.threads > 0) runtime::ThreadPool::global().set_num_threads(o.threads);
  if (o.schedules < 1) user_error("--schedules {}: expected >= 1", o.schedules);
  std::vector<int64_t> m_values = o.op.m_values();
  te::Operator op = o.op.build();
  std::string isa = o.isa.empty() ? codegen::host_target().isa : o.isa;
  schedule::vector_isa(isa);  // validates the name

  std::mt19937_64 rng(o.seed);
  std::vector<schedule::MicroKernelSchedule> schedules;
  if (!o.schedule_json.empty()) {
    schedules.push_back(schedule::schedule_from_json_text(o.schedule_json));
    schedule::validate(schedules.back(), op);
  } else {
    for (int i = 0; i < o.schedules; ++i) schedules.push_back(schedule::random_schedule(rng, isa, op));
  }
  std::vector<Case> cases;
  for (int64_t m : m_values) cases.push_back(make_case(op, o.op.shape_for(m), rng));

  int passed = 0, failed = 0;
  for (const schedule::MicroKernelSchedule& s : schedules) {
    runtime::Kernel kernel = runtime::Kernel::compile(op, s);
    for (size_t i = 0; i < m_values.size(); ++i) {
      double err = run_case(kernel, o.op.shape_for(m_values[i]), cases[i]);
      if (err <= o.tolerance) {
        ++passed;
        continue;
      }
      ++failed;
      fmt::print("FAILED (relative error {:.3g}): dietcode verify {} --threads {} --schedule '{}'\n",
                 err, o.op.command_line(m_values[i]), runtime::ThreadPool::global().num_threads(),
                 schedule::to_json_text(s));
    }
  }
  fmt::print("{} passed, {} failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace

void register_verify(CLI::App& app, Action& action) {
  auto o = std::make_shared<VerifyOptions>();
  CLI::App* cmd = app.add_subcommand("verify", "check generated kernels against the float64 reference");
  o->op.add_to(*cmd);
  cmd->add_option("--schedules", o->schedules, "random micro-kernels to draw")->capture_default_str();
  cmd->add_option("--seed", o->seed, "random seed (schedules and inputs)")->capture_default_str();
  cmd->add_option("--threads", o->threads, "threads for parallel loops (default: all cores)");
  cmd->add_option("--schedule", o->schedule_json, "check this one schedule (JSON) instead of drawing");
  cmd->add_option("--isa", o->isa, "vector ISA of drawn schedules: avx2 or avx512 (default: the host's)");
  cmd->add_option("--tolerance", o->tolerance, "largest relative Frobenius error accepted")
      ->capture_default_str();
  cmd->callback([&action, o] { action = [o] { return run_verify(*o); }; });
}

}  // namespace dietcode::tool
