// gpt train --config FILE.json [--KEY VALUE ...]: every config key is also a flag that overrides
// the file. SIGINT/SIGTERM finish the current iteration, save and exit 130/143; a second SIGINT
// exits at once (checkpoint files are replaced atomically, so nothing is left half-written).
#include <omp.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/config_loader.h"
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
  std::map<std::string, CLI::Option*> key_flags;
  std::map<std::string, std::string> key_values;
};

int run_train(TrainOptions& options) {
  setup_logging(options.quiet);
  std::map<std::string, std::string> overrides;
  for (const auto& [key, flag] : options.key_flags)
    if (flag->count() > 0) overrides[key] = options.key_values[key];
  const TrainConfig config = load_train_config(options.config_path, overrides);

  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  const TrainResult result = run_training(config, &g_stop_signal);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);

  spdlog::info("{} {} iterations in {} ({:.0f} tokens/s); best val loss {:.4f}; checkpoint: {}",
               result.stop_signal ? "stopped after" : "done:", result.iterations, format_duration(result.wall_seconds),
               result.tokens_per_second, result.best_val_loss, model_path(config.out_dir));
  return result.stop_signal ? 128 + result.stop_signal : 0;
}

}  // namespace

Command add_train_command(CLI::App& app) {
  auto options = std::make_shared<TrainOptions>();
  CLI::App* sub = app.add_subcommand("train", "Train a character-level GPT on a text file");
  sub->add_option("--config", options->config_path, "JSON config file (nanoGPT's key names)")->check(CLI::ExistingFile);
  sub->add_flag("--quiet", options->quiet, "log warnings and errors only");
  auto* group = sub->add_option_group("config keys", "Every config key, overriding the file");
  const TrainConfig defaults;
  const nlohmann::ordered_json default_values = to_json(defaults);
  for (const ConfigKey& key : config_keys()) {
    const char* type = std::visit(
        [](auto member) {
          using T = std::remove_reference_t<decltype(defaults.*member)>;
          if constexpr (std::is_same_v<T, int64_t>) return "INT";
          else if constexpr (std::is_same_v<T, double>) return "FLOAT";
          else if constexpr (std::is_same_v<T, bool>) return "BOOL";
          else return "TEXT";
        },
        key.member);
    const std::string help = std::string(key.help) + " (default " + default_values[key.name].dump() + ")";
    options->key_flags[key.name] =
        group->add_option(std::string("--") + key.name, options->key_values[key.name], help)
            ->type_name(type)
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a repeated flag: the last one wins
  }
  return {sub, [options] { return run_train(*options); }};
}

}  // namespace gpt
