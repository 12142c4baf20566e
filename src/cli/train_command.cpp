// gpt train --config FILE.json [--KEY VALUE ...]: every config key is also a flag that overrides
// the file. SIGINT/SIGTERM finish the current iteration, save and exit 130/143; a second SIGINT
// exits at once (checkpoint files are replaced atomically, so nothing is left half-written).
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <map>
#include <memory>

#include "cli/commands.h"
#include "cli/config_flags.h"
#include "cli/config_loader.h"
#include "dist/world.h"
#include "io/checkpoint.h"
#include "train/progress.h"
#include "train/trainer.h"

namespace gpt {

namespace {

std::atomic<int> g_stop_signal{0};

extern "C" void on_stop_signal(int signal) {
  if (g_stop_signal.load() != 0 && signal == SIGINT) _exit(130);  // second Ctrl-C: leave now
  g_stop_signal.store(signal);
}

struct TrainOptions {
  std::string config_path;
  bool quiet = false;
  ConfigFlags config_flags;
};

int run_train(TrainOptions& options) {
  // Rank 0 alone logs progress; the others say only what goes wrong.
  setup_logging(options.quiet || !World::instance().is_root());
  TrainConfig config;
  run_agreeing(World::instance(),
               [&] { config = load_train_config(options.config_path, options.config_flags.given()); });

  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  const TrainResult result = run_training(config, &g_stop_signal);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);

  if (World::instance().is_root())
    spdlog::info("{} {} iterations in {} ({:.0f} tokens/s); best val loss {:.4f}; checkpoint: {}",
                 result.stop_signal ? "stopped after" : "done:", result.iterations,
                 format_duration(result.wall_seconds), result.tokens_per_second, result.best_val_loss,
                 model_path(config.out_dir));
  return result.stop_signal ? 128 + result.stop_signal : 0;
}

}  // namespace

Command add_train_command(CLI::App& app) {
  auto options = std::make_shared<TrainOptions>();
  CLI::App* sub = app.add_subcommand("train", "Train a character-level GPT on a text file");
  sub->add_option("--config", options->config_path, "JSON config file (nanoGPT's key names)")->check(CLI::ExistingFile);
  sub->add_flag("--quiet", options->quiet, "log warnings and errors only");
  add_config_flags(sub, options->config_flags);
  return {sub, [options] { return run_train(*options); }};
}

}  // namespace gpt
