// The dietcode command-line tool. Subcommands live one per file (subcommands.h).
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "support/error.h"
#include "tools/dietcode/subcommands.h"

int main(int argc, char** argv) {
  using namespace dietcode::tool;
  CLI::App app{"dietcode: a tensor-program compiler for operators with dynamic shapes"};
  app.require_subcommand(1);
  Action action;
  register_verify(app, action);
  register_inspect(app, action);
  register_bench(app, action);
  register_tune(app, action);
  register_show(app, action);
  register_export(app, action);
  register_weights(app, action);
  register_run(app, action);
  register_refine(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return action();
  } catch (const dietcode::Error& e) {
    fmt::print(stderr, "dietcode: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "dietcode: internal error: {}\n", e.what());
    return 3;
  }
}
