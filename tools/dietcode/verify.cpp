// `dietcode verify` (after oneDNN's benchdnn): random valid micro-kernels x shapes;
// every generated kernel is checked against the float64 reference on fresh random
// inputs with the output poisoned (NaN) first. One line per failure, with the
// command that reproduces it, then "N passed, M failed".
#include "reference/verify.h"

#include <fmt/format.h>

#include <memory>

#include "runtime/thread_pool.h"
#include "support/error.h"
#include "tools/dietcode/operator_options.h"
#include "tools/dietcode/subcommands.h"

namespace dietcode::tool {

namespace {

struct VerifyCliOptions {
  OperatorOptions op;
  reference::VerifyOptions verify;
  int threads = 0;
  std::string schedule_json, isa;
};

int run_verify(VerifyCliOptions o) {
  if (o.threads < 0) user_error("--threads {}: expected >= 1", o.threads);
  if (o.threads > 0) runtime::ThreadPool::global().set_num_threads(o.threads);
  std::vector<int64_t> m_values = o.op.m_values();
  te::Operator op = o.op.build();
  if (!o.isa.empty()) o.verify.isa = schedule::parse_isa(o.isa);
  if (!o.schedule_json.empty()) {
    if (o.op.op == "attention")
      o.verify.attention_schedule = schedule::attention_schedule_from_json_text(o.schedule_json);
    else if (ops::is_row_operator(o.op.op))
      o.verify.row_schedule = schedule::row_schedule_from_json_text(o.schedule_json);
    else
      o.verify.schedule = schedule::schedule_from_json_text(o.schedule_json);
  }
  reference::VerifyResult r =
      reference::verify_kernels(op, m_values, o.verify, [&](const reference::VerifyFailure& f) {
        fmt::print(
            "FAILED (relative error {:.3g}): dietcode verify {} --threads {} --schedule '{}'\n",
            f.error, o.op.command_line(f.m), runtime::ThreadPool::global().num_threads(),
            f.schedule_json);
      });
  fmt::print("{} passed, {} failed\n", r.passed, r.failed);
  return r.failed == 0 ? 0 : 1;
}

}  // namespace

void register_verify(CLI::App& app, Action& action) {
  auto o = std::make_shared<VerifyCliOptions>();
  CLI::App* cmd =
      app.add_subcommand("verify", "check generated kernels against the float64 reference");
  o->op.add_to(*cmd);
  cmd->add_option("--schedules", o->verify.schedules,
                  "random schedules to draw (micro-kernels, or row schedules for a row operator)")
      ->capture_default_str();
  cmd->add_option("--seed", o->verify.seed, "random seed (schedules and inputs)")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "threads for parallel loops (default: all cores)");
  cmd->add_option("--schedule", o->schedule_json,
                  "check this one schedule (JSON) instead of drawing");
  cmd->add_option("--isa", o->isa,
                  "vector ISA of drawn schedules: avx2 or avx512 (default: the host's)");
  cmd->add_option("--tolerance", o->verify.tolerance, "largest relative Frobenius error accepted")
      ->capture_default_str();
  cmd->callback([&action, o] { action = [o] { return run_verify(*o); }; });
}

}  // namespace dietcode::tool
