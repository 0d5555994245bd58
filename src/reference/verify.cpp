#include "reference/verify.h"

#include <random>

#include "codegen/llvm/target.h"
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
  std::vector<schedule::BoundSchedule> schedules;
  if (o.schedule) {
    schedules.push_back(schedule::bind(*o.schedule, op));
  } else {
    for (int i = 0; i < o.schedules; ++i)
      schedules.push_back(schedule::bind(schedule::random_schedule(rng, isa, op), op));
  }
  std::vector<CheckCase> cases;
  for (int64_t m : m_values) cases.push_back(make_check_case(op, {m}, rng));

  VerifyResult result;
  for (const schedule::BoundSchedule& s : schedules) {
    runtime::Kernel kernel = runtime::Kernel::compile(s);
    for (size_t i = 0; i < m_values.size(); ++i) {
      double err = run_check_case(kernel, cases[i]);
      if (err <= o.tolerance) {
        ++result.passed;
        continue;
      }
      ++result.failed;
      on_failure({s.schedule(), m_values[i], err});
    }
  }
  return result;
}

}  // namespace dietcode::reference
