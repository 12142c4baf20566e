// gpt: command-line entry point. Wires the subcommands (one file each under cli/) and maps
// errors to exit codes: 2 for usage and input errors, 1 for runtime failures.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/check.h"
#include "distributed/world.h"
#include "kernels/cpu_features.h"
#include "kernels/gemm.h"

namespace {

// In a run of several processes, an error only this process met: say which rank met it (unless
// the message does), then end every process of the run (MPI_Abort) rather than leave the others
// waiting in a collective.
int fail(const gpt::World& world, const std::string& what, const std::string& message, int exit_code,
         bool message_names_rank = false) {
  if (!world.distributed() || message_names_rank)
    std::fprintf(stderr, "gpt: %s: %s\n", what.c_str(), message.c_str());
  else
    std::fprintf(stderr, "gpt: %s (%s): %s\n", what.c_str(), world.describe().c_str(), message.c_str());
  if (!world.distributed()) return exit_code;
  std::fflush(stderr);
  world.abort(exit_code);
}

int run(const std::vector<gpt::Command>& commands, const gpt::World& world) {
  try {
    for (const gpt::Command& command : commands)
      if (command.app->parsed()) return command.run(world);
  } catch (const gpt::AgreedFailure& e) {
    if (e.report) std::fprintf(stderr, "gpt: error: %s\n", e.message.c_str());
    return e.exit_code;
  } catch (const gpt::MpiFailure& e) {
    return fail(world, "error", e.what(), e.exit_code(), true);
  } catch (const gpt::UserError& e) {
    return fail(world, "error", e.what(), e.exit_code());
  } catch (const std::bad_alloc&) {
    return fail(world, "error", "out of memory", 1);
  } catch (const std::exception& e) {
    return fail(world, "internal error", e.what(), 1);
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Past a file size limit, write() should fail with EFBIG (reported with the file's name, the
  // old checkpoint kept) instead of the process being killed by SIGXFSZ mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  // Refused here, before any subcommand or kernel choice, so the library never meets a bad value.
  if (const std::string& error = gpt::max_isa_setting().error; !error.empty()) {
    std::fprintf(stderr, "gpt: error: %s\n", error.c_str());
    return 2;
  }
  CLI::App app{"gpt: train and sample character-level GPT models (nanoGPT's model, in one native binary)"};
  app.set_version_flag(
      "--version", [] { return std::string("gpt ") + GPT_VERSION + " (kernels: " + gpt::describe_kernels() + ")"; });
  app.require_subcommand(1);
  std::vector<gpt::Command> commands = {gpt::add_train_command(app),  gpt::add_sample_command(app),
                                        gpt::add_eval_command(app),   gpt::add_heads_command(app),
                                        gpt::add_bench_command(app),  gpt::add_prepare_command(app),
                                        gpt::add_report_command(app), gpt::add_export_command(app)};
#ifdef GPT_WITH_SERVE
  commands.push_back(gpt::add_serve_command(app));
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help and --version exit 0; usage errors 2
  }
  gpt::World world;
  try {
    world = gpt::World::start(&argc, &argv);
  } catch (const gpt::MpiFailure& e) {
    return fail(world, "error", e.what(), e.exit_code(), true);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpt: error: %s\n", e.what());
    return 2;
  }
  const int code = run(commands, world);
  world.stop();
  return code;
}
