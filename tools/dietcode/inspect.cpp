// `dietcode inspect`: the loop IR after each lowering pass, the LLVM IR or the
// assembly of one micro-kernel schedule for an operator, for any target ISA.
#include "inspect/inspect.h"

#include <fmt/format.h>

#include <memory>

#include "codegen/llvm/target.h"
#include "schedule/micro_kernel.h"
#include "tools/dietcode/operator_options.h"
#include "tools/dietcode/subcommands.h"

namespace dietcode::tool {

namespace {

struct InspectOptions {
  OperatorOptions op;
  std::string schedule_json;
  std::string what = "loops";
  std::string isa;
};

int run_inspect(const InspectOptions& o) {
  te::Operator op = o.op.build();
  codegen::CpuTarget target =
      o.isa.empty() ? codegen::host_target() : codegen::target_for_isa(schedule::parse_isa(o.isa));
  if (o.op.op == "attention")
    fmt::print("{}", inspect::schedule_text(
                         op, schedule::attention_schedule_from_json_text(o.schedule_json), target,
                         o.what));
  else if (ops::is_row_operator(o.op.op))
    fmt::print("{}",
               inspect::schedule_text(op, schedule::row_schedule_from_json_text(o.schedule_json),
                                      target, o.what));
  else
    fmt::print("{}", inspect::schedule_text(op, schedule::schedule_from_json_text(o.schedule_json),
                                            target, o.what));
  return 0;
}

}  // namespace

void register_inspect(CLI::App& app, Action& action) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* cmd =
      app.add_subcommand("inspect", "print the loop IR, LLVM IR or assembly of a schedule");
  o->op.add_to(*cmd);
  cmd->add_option("--schedule", o->schedule_json,
                  "the schedule (JSON): a micro-kernel, or a row schedule for a row operator")
      ->required();
  cmd->add_option("--what", o->what, "loops, llvm, llvm-unoptimized or asm")->capture_default_str();
  cmd->add_option("--isa", o->isa, "target ISA for llvm/asm: avx2 or avx512 (default: the host)");
  cmd->callback([&action, o] { action = [o] { return run_inspect(*o); }; });
}

}  // namespace dietcode::tool
