// `dietcode verify` (after oneDNN's benchdnn): random valid micro-kernels x shapes;
// every generated kernel is checked against the float64 reference on fresh random
// inputs with the output poisoned (NaN) first. One line per failure, with the
// command that reproduces it, then "N passed, M failed".
#include <fmt/format.h>

#include <memory>
#include <random>

#include "codegen/llvm/target.h"
#include "reference/check.h"
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

int run_verify(const VerifyOptions& o) {
  if (o.threads < 0) user_error("--threads {}: expected >= 1", o.threads);
  if (o.threads > 0) runtime::ThreadPool::global().set_num_threads(o.threads);
  if (o.schedules < 1) user_error("--schedules {}: expected >= 1", o.schedules);
  std::vector<int64_t> m_values = o.op.m_values();
  te::Operator op = o.op.build();
  const schedule::Isa isa = o.isa.empty() ? codegen::host_target().isa : schedule::parse_isa(o.isa);

  std::mt19937_64 rng(o.seed);
  std::vector<schedule::BoundSchedule> schedules;
  if (!o.schedule_json.empty()) {
    schedules.push_back(schedule::bind(schedule::schedule_from_json_text(o.schedule_json), op));
  } else {
    for (int i = 0; i < o.schedules; ++i)
      schedules.push_back(schedule::bind(schedule::random_schedule(rng, isa, op), op));
  }
  std::vector<reference::CheckCase> cases;
  for (int64_t m : m_values)
    cases.push_back(reference::make_check_case(op, o.op.shape_for(m), rng));

  int passed = 0, failed = 0;
  for (const schedule::BoundSchedule& s : schedules) {
    runtime::Kernel kernel = runtime::Kernel::compile(s);
    for (size_t i = 0; i < m_values.size(); ++i) {
      double err = reference::run_check_case(kernel, cases[i]);
      if (err <= o.tolerance) {
        ++passed;
        continue;
      }
      ++failed;
      fmt::print(
          "FAILED (relative error {:.3g}): dietcode verify {} --threads {} --schedule '{}'\n", err,
          o.op.command_line(m_values[i]), runtime::ThreadPool::global().num_threads(),
          schedule::to_json_text(s.schedule()));
    }
  }
  fmt::print("{} passed, {} failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace

void register_verify(CLI::App& app, Action& action) {
  auto o = std::make_shared<VerifyOptions>();
  CLI::App* cmd =
      app.add_subcommand("verify", "check generated kernels against the float64 reference");
  o->op.add_to(*cmd);
  cmd->add_option("--schedules", o->schedules, "random micro-kernels to draw")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "random seed (schedules and inputs)")->capture_default_str();
  cmd->add_option("--threads", o->threads, "threads for parallel loops (default: all cores)");
  cmd->add_option("--schedule", o->schedule_json,
                  "check this one schedule (JSON) instead of drawing");
  cmd->add_option("--isa", o->isa,
                  "vector ISA of drawn schedules: avx2 or avx512 (default: the host's)");
  cmd->add_option("--tolerance", o->tolerance, "largest relative Frobenius error accepted")
      ->capture_default_str();
  cmd->callback([&action, o] { action = [o] { return run_verify(*o); }; });
}

}  // namespace dietcode::tool
