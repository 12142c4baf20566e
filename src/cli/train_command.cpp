// gpt train --config FILE.json [--KEY VALUE ...]: every config key is also a flag that overrides
// the file. SIGINT/SIGTERM finish the current iteration, save and exit 130/143; during set-up or
// an evaluation they stop within a batch (before the first iteration, with nothing to save); a
// second SIGINT exits at once (checkpoint files are replaced atomically, so nothing is left
// half-written).
#include <omp.h>
#include <spdlog/spdlog.h>

#include <map>
#include <memory>

#include "cli/checkpoint_options.h"
#include "cli/commands.h"
#include "cli/config_flags.h"
#include "cli/config_loader.h"
#include "cli/run_files.h"
#include "cli/stop_signal.h"
#include "distributed/world.h"
#include "io/checkpoint.h"
#include "io/run_folder.h"
#include "train/progress.h"
#include "train/trainer.h"

namespace gpt {

namespace {

struct TrainOptions {
  std::string config_path;
  bool quiet = false;
  ConfigFlags config_flags;
};

// The two files a run leaves and what each holds: the best evaluation's weights (their average
// with ema_decay: what the evaluations measured), and the last iteration for init_from "resume".
std::string describe_saved_files(const TrainResult& result, const std::string& out_dir, bool averaged) {
  std::string best = fmt::format("best val loss {:.4f}", result.best_val_loss);
  if (result.best_iter >= 0) best += fmt::format(" (iteration {})", result.best_iter);
  if (averaged) best += " of the weights' average";
  const std::string last_loss = result.last_eval_iter != result.final_iter ? std::string("not evaluated")
                                : averaged ? fmt::format("its average's val loss {:.4f}", result.last_val_loss)
                                           : fmt::format("val loss {:.4f}", result.last_val_loss);
  return fmt::format("{}: {}; last iteration {} ({}): {}", best, model_path(out_dir), result.final_iter, last_loss,
                     resume_path(out_dir));
}

int run_train(TrainOptions& options, const World& world) {
  // Rank 0 alone logs progress; the others say only what goes wrong.
  setup_logging(options.quiet || !world.is_root());
  TrainConfig config;
  run_agreeing(world, [&] { config = load_train_config(options.config_path, options.config_flags.given()); });
  set_thread_count(config.threads);

  const TrainResult result = [&] {
    const StopSignalScope stop;
    SteadyClock clock;
    // The report follows the run: refreshed at every evaluation, completed at the end.
    return run_training(config, RunContext{world, stop.signal(), clock,
                                           [&] { write_run_report(config.out_dir, RunStage::in_progress); }});
  }();
  if (world.is_root()) {
    try {
      write_run_report(config.out_dir, result.stop_signal ? RunStage::stopped : RunStage::finished);
      spdlog::info("report: {}", run_file(config.out_dir, kReportFile));
    } catch (const UserError& e) {
      spdlog::warn("no report: {}", e.what());
    }
  }

  // A stopped run has said where it stopped; a finished one says how far it went.
  if (world.is_root() && result.stop_signal && result.iterations == 0)
    spdlog::info("stopped in {}, before the first iteration", format_duration(result.wall_seconds));
  else if (world.is_root() && result.stop_signal)
    spdlog::info("stopped in {} ({:.0f} tokens/s); {}", format_duration(result.wall_seconds), result.tokens_per_second,
                 describe_saved_files(result, config.out_dir, config.ema_decay > 0));
  else if (world.is_root())
    spdlog::info("done: {} iterations in {} ({:.0f} tokens/s); {}", result.iterations,
                 format_duration(result.wall_seconds), result.tokens_per_second,
                 describe_saved_files(result, config.out_dir, config.ema_decay > 0));
  return result.stop_signal ? 128 + result.stop_signal : 0;
}

}  // namespace

Command add_train_command(CLI::App& app) {
  auto options = std::make_shared<TrainOptions>();
  CLI::App* sub = app.add_subcommand(
      "train", "Train a character-level GPT on a text file, a folder of text files or a prepared dataset");
  sub->add_option("--config", options->config_path, "JSON config file (nanoGPT's key names)")->check(CLI::ExistingFile);
  sub->add_flag("--quiet", options->quiet, "log warnings and errors only");
  add_config_flags(sub, options->config_flags);
  return {sub, [options](const World& world) { return run_train(*options, world); }};
}

}  // namespace gpt
