// `dietcode refine`: a tuned model's dispatch decided again inside the model
// (workflow/refine_model.h): each module's kernel at a set of lengths timed against the
// module's other kernels selected near that length, in pairs of forward calls, and a
// length moved where the operator's time ratio is below --accept-below with 95% confidence.
//
//   dietcode tune bert-base --threads 2 --out dietcode-out/bert-base-2t
//   dietcode refine dietcode-out/bert-base-2t --threads 2
#include <fmt/format.h>

#include <memory>

#include "support/error.h"
#include "support/parse.h"
#include "tools/dietcode/subcommands.h"
#include "workflow/refine_model.h"

namespace dietcode::tool {

namespace {

struct RefineCliOptions {
  workflow::RefineOptions refine;
  std::string lengths;
  std::string modules = "qkv,out,ffn1,ffn2";
};

int run_refine(RefineCliOptions o) {
  if (o.refine.threads < 1) user_error("--threads {}: expected >= 1", o.refine.threads);
  if (!o.lengths.empty()) o.refine.lengths = parse_int_list(o.lengths, "--lengths");
  o.refine.modules.clear();
  for (std::string& name : split_names(o.modules))
    if (!name.empty()) o.refine.modules.push_back(std::move(name));
  if (o.refine.modules.empty()) user_error("--modules: expected names such as qkv,out,ffn1,ffn2");
  fmt::print("{}", workflow::format_refine_result(o.refine, workflow::refine_model(o.refine)));
  return 0;
}

}  // namespace

void register_refine(CLI::App& app, Action& action) {
  auto o = std::make_shared<RefineCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "refine",
      "decide a tuned model's dispatch again inside the model: each module's kernels timed in "
      "pairs of forward calls at a set of lengths");
  cmd->add_option("model_dir", o->refine.model_dir,
                  "model directory (dietcode tune bert-base --out)")
      ->required();
  cmd->add_option(
      "--weights", o->refine.weights,
      "safetensors weights (default: the model directory's random-12-layers.safetensors)");
  cmd->add_option("--threads", o->refine.threads, "threads, as the model will run")
      ->capture_default_str();
  cmd->add_option("--lengths", o->lengths,
                  "probe lengths, '8,24,48' or '1..128' (default: the encoder table's 18)");
  cmd->add_option("--modules", o->modules, "the modules to refine")->capture_default_str();
  cmd->add_option("--pairs", o->refine.pairs, "pairs of forward calls per comparison")
      ->capture_default_str();
  cmd->add_option("--screen-pairs", o->refine.screen_pairs,
                  "stop a comparison after this many pairs when the kernel is already ruled out "
                  "(0: never)")
      ->capture_default_str();
  cmd->add_option("--accept-below", o->refine.accept_below,
                  "move a length when the 95% interval of the time ratio lies below this")
      ->capture_default_str();
  cmd->add_flag("--dry-run", o->refine.dry_run, "report the moves, write nothing");
  cmd->add_flag("--quiet", o->refine.quiet, "no progress on stderr");
  cmd->callback([&action, o] { action = [o] { return run_refine(*o); }; });
}

}  // namespace dietcode::tool
