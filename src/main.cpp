// gpt: command-line entry point. Wires the subcommands (one file each under cli/) and maps
// errors to exit codes: 2 for usage and input errors, 1 for runtime failures.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <new>
#include <vector>

#include "cli/commands.h"
#include "core/check.h"

int main(int argc, char** argv) {
  // Past a file size limit, write() should fail with EFBIG (reported with the file's name, the
  // old checkpoint kept) instead of the process being killed by SIGXFSZ mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"gpt: train and sample character-level GPT models (nanoGPT's model, in one native binary)"};
  app.set_version_flag("--version", std::string("gpt ") + GPT_VERSION);
  app.require_subcommand(1);
  const std::vector<gpt::Command> commands = {gpt::add_train_command(app), gpt::add_sample_command(app),
                                              gpt::add_eval_command(app), gpt::add_heads_command(app),
                                              gpt::add_bench_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help and --version exit 0; usage errors 2
  }
  try {
    for (const gpt::Command& command : commands)
      if (command.app->parsed()) return command.run();
  } catch (const gpt::UserError& e) {
    std::fprintf(stderr, "gpt: error: %s\n", e.what());
    return e.exit_code();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "gpt: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpt: internal error: %s\n", e.what());
    return 1;
  }
  return 2;
}
