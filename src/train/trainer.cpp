#include "train/trainer.h"

#include <omp.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "data/dataset.h"
#include "io/atomic_file.h"
#include "io/checkpoint.h"
#include "kernels/fma_probe.h"
#include "model/gpt.h"
#include "train/evaluate.h"
#include "train/gradient_sync.h"
#include "train/lr_schedule.h"
#include "train/optimizer.h"
#include "train/run_reporter.h"
#include "train/train_step.h"

namespace gpt {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void check_resume_matches(const GptConfig& saved, const TrainConfig& config, const std::string& path) {
  const std::pair<const char*, std::pair<int64_t, int64_t>> sizes[] = {
      {"n_layer", {saved.n_layer, config.n_layer}},
      {"n_head", {saved.n_head, config.n_head}},
      {"n_embd", {saved.n_embd, config.n_embd}},
      {"block_size", {saved.block_size, config.block_size}}};
  for (const auto& [key, values] : sizes)
    if (values.first != values.second)
      throw UserError("cannot resume: " + path + " has " + key + " " + std::to_string(values.first) +
                      " but the config says " + std::to_string(values.second));
  if (saved.bias != config.bias) throw UserError("cannot resume: " + path + " and the config disagree on \"bias\"");
}

OptimizerState optimizer_state(Optimizer& optimizer) {
  return {optimizer.name(), optimizer.step_count(), optimizer.state()};
}

// One run of `gpt train`: setup in the constructor (threads, data, model, optimizer, resume), then
// run() loops over iterations, each an evaluation-and-checkpoint decision and a training step.
class TrainingRun {
 public:
  TrainingRun(const TrainConfig& config, const std::atomic<int>* stop_signal)
      : config_(config),
        stop_signal_(stop_signal),
        start_(Clock::now()),
        data_(load_data(config)),
        resume_(config.init_from == "resume") {
    create_out_dir();
    load_or_init();
    write_file_atomically((std::filesystem::path(config_.out_dir) / "config.json").string(),
                          to_json(config_).dump(2) + "\n");
    settings_ = {config_.batch_size, config_.block_size, config_.gradient_accumulation_steps, config_.grad_clip,
                 static_cast<uint64_t>(config_.seed)};
    tokens_per_iter_ =
        static_cast<double>(config_.batch_size * config_.block_size * config_.gradient_accumulation_steps);
    // MFU: nanoGPT's flop estimate per iteration against this machine's measured FMA peak.
    static const double peak_gflops = measure_fma_peak_gflops(0.2);
    reporter_ = std::make_unique<RunReporter>(
        config_, tokens_per_iter_, model_->flops_per_token() * tokens_per_iter_ * 1e-9, peak_gflops, resume_);
    log_setup();
  }

  TrainResult run() {
    result_.last_val_loss = std::numeric_limits<double>::quiet_NaN();
    int64_t iter = state_.iter_num;
    const int64_t first_iter = iter;
    for (;;) {
      const bool eval_already_logged = resume_ && iter == first_iter && state_.eval_done;
      if (is_eval_iteration(iter) && !eval_already_logged) evaluate_and_checkpoint(iter);
      if (iter >= config_.max_iters) break;
      train_iteration(iter);
      ++iter;
      if (stop_requested(iter)) break;
    }
    reporter_->clear_progress();
    if (result_.stop_signal == 0 && last_saved_iter_ != iter) {
      save(iter, true);
      spdlog::info("saved final checkpoint to {}", model_path(config_.out_dir));
    }
    return finish(iter);
  }

 private:
  // The thread count is set first: reading the data already runs parallel loops.
  static Dataset load_data(const TrainConfig& config) {
    if (config.threads > 0) omp_set_num_threads(static_cast<int>(config.threads));
    return Dataset(config.data_path, config.val_fraction, config.block_size);
  }

  void create_out_dir() const {
    std::error_code ec;
    std::filesystem::create_directories(config_.out_dir, ec);
    if (ec) throw UserError("cannot create out_dir " + config_.out_dir + ": " + ec.message(), 1);
  }

  void load_or_init() {
    if (resume_) {
      LoadedModel loaded = load_model(config_.out_dir);
      check_resume_matches(loaded.model->config(), config_, loaded.path);
      if (loaded.vocab.code_points() != data_.vocab().code_points())
        throw UserError("cannot resume: the vocabulary of " + config_.data_path + " differs from the one in " +
                        loaded.path);
      model_ = std::move(loaded.model);
    } else {
      model_ = std::make_unique<Gpt>(config_.model_config(data_.vocab().size()));
      model_->init_weights(static_cast<uint64_t>(config_.seed));
    }
    model_->set_dropout(static_cast<float>(config_.dropout));  // a training setting: a resumed run uses the config's
    optimizer_ = make_optimizer(config_, model_->params());
    if (!resume_) return;
    OptimizerState restored = optimizer_state(*optimizer_);
    state_ = load_training_state(config_.out_dir, *model_, restored);
    optimizer_->set_step_count(restored.step);
    spdlog::info("resuming from {} at iteration {} (best val loss {:.4f})", model_path(config_.out_dir),
                 state_.iter_num, state_.best_val_loss);
  }

  void log_setup() const {
    spdlog::info("model: {} parameters, {} layers, {} heads, n_embd {}, block_size {}, vocab {}; optimizer {}",
                 model_->params().parameter_count(), config_.n_layer, config_.n_head, config_.n_embd,
                 config_.block_size, data_.vocab().size(), optimizer_->name());
    spdlog::info("data: {} train / {} val characters from {}; {} tokens per iteration; {} threads",
                 data_.train().size(), data_.val().size(), config_.data_path, static_cast<int64_t>(tokens_per_iter_),
                 omp_get_max_threads());
  }

  bool is_eval_iteration(int64_t iter) const { return iter % config_.eval_interval == 0 || iter == config_.max_iters; }

  // nanoGPT's policy: evaluate both splits; save when val loss improves (or always), never at 0.
  void evaluate_and_checkpoint(int64_t iter) {
    reporter_->clear_progress();
    const auto eval_start = Clock::now();
    const EvalBatches batches{static_cast<uint64_t>(config_.seed), iter, config_.eval_iters, config_.batch_size,
                              config_.block_size};
    const double train_loss = estimate_loss(*model_, graph_, data_.train(), Split::train, batches, batch_);
    const double val_loss = estimate_loss(*model_, graph_, data_.val(), Split::val, batches, batch_);
    result_.last_val_loss = val_loss;
    reporter_->evaluation(iter, train_loss, val_loss, schedule_.at(iter), seconds_since(eval_start));
    if (val_loss < state_.best_val_loss || config_.always_save_checkpoint) {
      state_.best_val_loss = std::min(state_.best_val_loss, val_loss);
      if (iter > 0) {
        save(iter, true);
        spdlog::info("saved checkpoint to {}", model_path(config_.out_dir));
      }
    }
  }

  void train_iteration(int64_t iter) {
    const auto iter_start = Clock::now();
    const double lr = schedule_.at(iter);
    const StepResult step = train_step(*model_, graph_, *optimizer_, sync_, data_.train(), settings_, iter, lr, batch_);
    if (!step.finite())
      throw UserError("training diverged at iteration " + std::to_string(iter) + ": loss " + std::to_string(step.loss) +
                          ", gradient norm " + std::to_string(step.grad_norm) + " (learning rate " +
                          std::to_string(lr) + "); the last good checkpoint in " + config_.out_dir +
                          " was kept. Try a lower learning_rate.",
                      1);
    const double dt = seconds_since(iter_start);
    train_seconds_ += dt;
    ++result_.iterations;
    reporter_->iteration({iter, step.loss, step.grad_norm, lr, dt});
  }

  // After a stop signal: save where the run is, to resume exactly there.
  bool stop_requested(int64_t next_iter) {
    if (!stop_signal_ || stop_signal_->load() == 0) return false;
    reporter_->clear_progress();
    result_.stop_signal = stop_signal_->load();
    save(next_iter, false);
    spdlog::warn("interrupted after iteration {}: checkpoint saved to {}; continue with init_from \"resume\"",
                 next_iter - 1, model_path(config_.out_dir));
    return true;
  }

  void save(int64_t iter_num, bool eval_done) {
    last_saved_iter_ = iter_num;
    state_.iter_num = iter_num;
    state_.eval_done = eval_done;
    state_.train_config = to_json(config_);
    const OptimizerState optimizer = optimizer_state(*optimizer_);
    save_checkpoint(config_.out_dir, *model_, data_.vocab(), &state_, &optimizer);
  }

  TrainResult finish(int64_t iter) {
    result_.final_iter = iter;
    result_.best_val_loss = state_.best_val_loss;
    result_.wall_seconds = seconds_since(start_);
    result_.tokens_per_second =
        train_seconds_ > 0 ? tokens_per_iter_ * static_cast<double>(result_.iterations) / train_seconds_ : 0;
    return result_;
  }

  const TrainConfig& config_;
  const std::atomic<int>* stop_signal_;
  Clock::time_point start_;
  const Dataset data_;
  const bool resume_;
  std::unique_ptr<Gpt> model_;
  std::unique_ptr<Optimizer> optimizer_;
  LocalGradientSync sync_;
  TrainingState state_;
  StepSettings settings_{};
  LrSchedule schedule_ = lr_schedule(config_);
  double tokens_per_iter_ = 0;
  std::unique_ptr<RunReporter> reporter_;
  Arena arena_{64u << 20};
  Graph graph_{arena_};
  Batch batch_;
  TrainResult result_;
  int64_t last_saved_iter_ = -1;
  double train_seconds_ = 0.0;
};

}  // namespace

TrainResult run_training(const TrainConfig& config, const std::atomic<int>* stop_signal) {
  TrainingRun run(config, stop_signal);
  return run.run();
}

}  // namespace gpt
