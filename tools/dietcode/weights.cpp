// `dietcode weights`: model weight files. `--random` writes a BERT encoder's weights
// (the usual checkpoint names, float32) drawn from a seeded generator, the same bytes for
// the same arguments on every machine; with a file argument, lists its tensors, checking
// the file as a model load does.
#include <fmt/format.h>

#include <memory>

#include "model/safetensors.h"
#include "tools/dietcode/subcommands.h"

namespace dietcode::tool {

namespace {

struct WeightsOptions {
  std::string file;
  bool random = false;
  model::BertShape shape;
  uint64_t seed = 1;
};

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t d : shape) s += (s.empty() ? "" : " x ") + std::to_string(d);
  return s.empty() ? "scalar" : s;
}

int run_weights(const WeightsOptions& o) {
  if (o.random) {
    model::write_random_bert_weights(o.file, o.shape, o.seed);
    model::Safetensors f = model::Safetensors::open(o.file);
    int64_t elements = 0;
    for (const auto& [name, info] : f.tensors()) elements += info.elements();
    fmt::print(
        "{}: BERT encoder, {} layers, hidden {}, {} heads, ffn {}, seed {}: {} tensors, "
        "{:.1f} MB\n",
        o.file, o.shape.layers, o.shape.hidden, o.shape.heads, o.shape.ffn, o.seed,
        f.tensors().size(), 4e-6 * double(elements));
    return 0;
  }
  model::Safetensors f = model::Safetensors::open(o.file);
  for (const auto& [name, info] : f.tensors()) fmt::print("{}  {}\n", name, shape_text(info.shape));
  fmt::print("{} tensors\n", f.tensors().size());
  return 0;
}

}  // namespace

void register_weights(CLI::App& app, Action& action) {
  auto o = std::make_shared<WeightsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "weights", "list a safetensors weight file, or write random BERT weights (--random)");
  cmd->add_option("file", o->file, "the safetensors file (written with --random)")->required();
  cmd->add_flag("--random", o->random, "write a BERT encoder's weights from a seeded generator");
  cmd->add_option("--layers", o->shape.layers, "encoder layers")->capture_default_str();
  cmd->add_option("--hidden", o->shape.hidden, "hidden size")->capture_default_str();
  cmd->add_option("--heads", o->shape.heads, "attention heads")->capture_default_str();
  cmd->add_option("--ffn", o->shape.ffn, "feed-forward size")->capture_default_str();
  cmd->add_option("--seed", o->seed, "generator seed")->capture_default_str();
  cmd->callback([&action, o] { action = [o] { return run_weights(*o); }; });
}

}  // namespace dietcode::tool
