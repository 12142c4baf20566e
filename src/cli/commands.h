// The subcommands. Each file adds one subcommand to the CLI11 app (its options struct, the flags
// bound to it) and returns the function that runs it in the process's world and yields the
// process exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "distributed/world.h"

namespace gpt {

struct Command {
  CLI::App* app;
  std::function<int(const World&)> run;
};

Command add_train_command(CLI::App& app);
Command add_eval_command(CLI::App& app);
Command add_sample_command(CLI::App& app);
Command add_heads_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_prepare_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_export_command(CLI::App& app);
#ifdef GPT_WITH_SERVE
Command add_serve_command(CLI::App& app);
#endif

// Logging goes to stderr through spdlog; configured once, here.
void setup_logging(bool quiet);

}  // namespace gpt
