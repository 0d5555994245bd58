#include "reference/verify.h"

#include <random>

#include "codegen/llvm/target.h"
#include "ops/attention.h"
#include "ops/contraction.h"
#include "reference/check.h"
#include "runtime/kernel.h"
#include "schedule/random_schedule.h"
#include "support/error.h"

namespace dietcode::reference {

VerifyResult verify_kernels(const te::Operator& op, const std::vector<int64_t>& m_values,
                            const VerifyOptions& o,
                            const std::function<void(const VerifyFailure&)>& on_failure) {
  if (o.schedules < 1) user_error("--schedules {}: expected >= 1", o.schedules);
  const schedule::Isa isa = o.isa.value_or(codegen::host_target().isa);

  std::mt19937_64 rng(o.seed);
  const bool attention = ops::is_attention(op);
  bool row_op = !attention && !op.stages.empty();
  if (!row_op && !attention) {
    try {
      ops::match_contraction(op);
    } catch (const Error&) {
      row_op = true;  // elementwise: a row operator without stages (bind says if not)
    }
  }
  // Compiled kernels with their schedule's JSON, drawn from the operator's kind.
  std::vector<std::pair<std::function<runtime::Kernel()>, std::string>> schedules;
  auto add_row = [&](const schedule::RowSchedule& s) {
    schedules.emplace_back([b = schedule::bind(s, op)] { return runtime::Kernel::compile(b); },
                           schedule::to_json_text(s));
  };
  auto add_contraction = [&](const schedule::MicroKernelSchedule& s) {
    schedules.emplace_back([b = schedule::bind(s, op)] { return runtime::Kernel::compile(b); },
                           schedule::to_json_text(s));
  };
  auto add_attention = [&](const schedule::AttentionSchedule& s) {
    schedules.emplace_back([b = schedule::bind(s, op)] { return runtime::Kernel::compile(b); },
                           schedule::to_json_text(s));
  };
  const char* kind = attention ? "fused attention" : row_op ? "a row operator" : "a contraction";
  const char* expected = attention ? "an attention schedule"
                         : row_op  ? "a row schedule"
                                   : "a micro-kernel";
  if ((o.schedule && (row_op || attention)) || (o.row_schedule && !row_op) ||
      (o.attention_schedule && !attention))
    user_error("operator {} is {}; --schedule expects {}", op.name, kind, expected);
  if (o.row_schedule) {
    add_row(*o.row_schedule);
  } else if (o.attention_schedule) {
    add_attention(*o.attention_schedule);
  } else if (o.schedule) {
    add_contraction(*o.schedule);
  } else {
    for (int i = 0; i < o.schedules; ++i) {
      if (attention)
        add_attention(schedule::random_attention_schedule(rng, isa));
      else if (row_op)
        add_row(schedule::random_row_schedule(rng, isa));
      else
        add_contraction(schedule::random_schedule(rng, isa, op));
    }
  }
  std::vector<CheckCase> cases;
  for (int64_t m : m_values) cases.push_back(make_check_case(op, {m}, rng));

  VerifyResult result;
  for (const auto& [compile, json] : schedules) {
    runtime::Kernel kernel = compile();
    for (size_t i = 0; i < m_values.size(); ++i) {
      double err = run_check_case(kernel, cases[i]);
      if (err <= o.tolerance) {
        ++result.passed;
        continue;
      }
      ++result.failed;
      on_failure({json, m_values[i], err});
    }
  }
  return result;
}

}  // namespace dietcode::reference
