// Each subcommand registers its options on the app and, when chosen, sets the
// action main() runs. One file per subcommand.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace dietcode::tool {

using Action = std::function<int()>;

void register_verify(CLI::App& app, Action& action);
void register_inspect(CLI::App& app, Action& action);
void register_bench(CLI::App& app, Action& action);
void register_tune(CLI::App& app, Action& action);
void register_show(CLI::App& app, Action& action);
void register_export(CLI::App& app, Action& action);
void register_weights(CLI::App& app, Action& action);
void register_run(CLI::App& app, Action& action);
void register_refine(CLI::App& app, Action& action);

}  // namespace dietcode::tool
