#include "train/trainer.h"

#include <omp.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/atomic_file.h"
#include "core/check.h"
#include "data/dataset.h"
#include "dist/world.h"
#include "io/checkpoint.h"
#include "kernels/fma_probe.h"
#include "model/gpt.h"
#include "train/distributed_state.h"
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

[[noreturn]] void fail_on_every_rank(const World& world, const std::string& message, int exit_code) {
  if (!world.distributed()) throw UserError(message, exit_code);
  throw AgreedFailure{message, exit_code, world.is_root()};
}

// FNV-1a over the weights' bytes: equal on every process exactly when the weights are.
int64_t weights_hash(const ParamStore& params, const float* data) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < params.padded_floats() * sizeof(float); ++i) h = (h ^ bytes[i]) * 0x100000001b3ull;
  return static_cast<int64_t>(h >> 1);
}

// One run of `gpt train` in one process of a world of one or more: setup in the constructor
// (threads, data, model, optimizer, resume; every process agrees that it succeeded before any
// waits for another), then run() loops over iterations, each an evaluation-and-checkpoint
// decision and a training step. Every process computes the same values; rank 0 alone writes.
class TrainingRun {
 public:
  TrainingRun(const TrainConfig& config, const std::atomic<int>* stop_signal)
      : config_(config),
        stop_signal_(stop_signal),
        world_(World::instance()),
        start_(Clock::now()),
        resume_(config.init_from == "resume") {
    // Rank 0 prepares text first; the others then find it prepared (on a shared file system) or
    // prepare their host's copy.
    run_agreeing(world_, [&] {
      if (world_.is_root()) open_data();
    });
    run_agreeing(world_, [&] {
      if (!world_.is_root()) open_data();
      set_up_locally();
    });
    if (resume_) share_resumed_state(world_, model_->params(), state_, *optimizer_, resumed_, resumed_step_);
    settings_ = {config_.batch_size, config_.block_size, config_.gradient_accumulation_steps, config_.grad_clip,
                 static_cast<uint64_t>(config_.seed)};
    tokens_per_iter_ =
        static_cast<double>(config_.batch_size * config_.block_size * config_.gradient_accumulation_steps);
    // MFU: nanoGPT's flop estimate per iteration against the measured FMA peaks of all processes.
    static const double peak_gflops = measure_fma_peak_gflops(0.2);
    if (world_.is_root()) {
      write_file_atomically((std::filesystem::path(config_.out_dir) / "config.json").string(),
                            to_json(config_).dump(2) + "\n");
      reporter_ =
          std::make_unique<RunReporter>(config_, tokens_per_iter_, model_->flops_per_token() * tokens_per_iter_ * 1e-9,
                                        peak_gflops * world_.size(), resume_);
      log_setup();
    }
    completed_iter_ = state_.iter_num;
    if (world_.is_root() && world_.distributed() && !optimizer_sharded() && stop_signal_)
      stop_saver_ = std::thread([this] { save_when_stopped(); });
  }

  ~TrainingRun() {
    finished_.store(true);
    if (stop_saver_.joinable()) stop_saver_.join();
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
    if (reporter_) reporter_->clear_progress();
    if (result_.stop_signal == 0 && saved_iter() != iter) {
      save(iter, true);
      if (world_.is_root()) spdlog::info("saved final checkpoint to {}", model_path(config_.out_dir));
    }
    return finish(iter);
  }

 private:
  // What each process does on its own; run_agreeing makes a failure anywhere a failure everywhere.
  void set_up_locally() {
    if (config_.threads > 0) omp_set_num_threads(static_cast<int>(config_.threads));
    if (config_.gradient_accumulation_steps % world_.size() != 0)
      throw UserError("gradient_accumulation_steps (" + std::to_string(config_.gradient_accumulation_steps) +
                      ") must be divisible by the number of processes (" + std::to_string(world_.size()) +
                      "): it counts the micro-batches of an iteration over all of them");
    if (world_.is_root()) create_out_dir();
    model_ = std::make_unique<Gpt>(config_.model_config(data_->vocab().size()));
    if (!resume_) model_->init_weights(static_cast<uint64_t>(config_.seed));
    model_->set_dropout(static_cast<float>(config_.dropout));  // a training setting: a resumed run uses the config's
    if (world_.distributed())
      sync_ = std::make_unique<DataParallelSync>(world_, model_->params(), config_.zero_stage == 1);
    else
      sync_ = std::make_unique<LocalGradientSync>();
    optimizer_ = make_optimizer(config_, model_->params(), sync_->optimizer_shard(model_->params()));
    resumed_ = whole_state_buffers(*optimizer_, resume_ ? model_->params().padded_floats() : 0);
    if (resume_ && world_.is_root()) load_checkpoint();
  }

  void open_data() {
    data_ = std::make_unique<Dataset>(Dataset::open(config_.corpus(), config_.cache_dir, stop_signal_));
    data_->check_fits(config_.block_size, true);
  }

  void create_out_dir() const {
    std::error_code ec;
    std::filesystem::create_directories(config_.out_dir, ec);
    if (ec) throw UserError("cannot create out_dir " + config_.out_dir + ": " + ec.message(), 1);
  }

  // Rank 0: the checkpoint's weights into the model, its optimizer state into resumed_.
  void load_checkpoint() {
    LoadedModel loaded = load_model(config_.out_dir);
    check_resume_matches(loaded.model->config(), config_, loaded.path);
    if (loaded.vocab != data_->vocab())
      throw UserError("cannot resume: the vocabulary of " + config_.data_path + " differs from the one in " +
                      loaded.path);
    ParamStore& params = model_->params();
    std::memcpy(params.data(), loaded.model->params().data(), params.padded_floats() * sizeof(float));
    OptimizerState restored{optimizer_->name(), 0, {}};
    const std::vector<NamedBuffer> names = optimizer_->state();
    for (std::size_t i = 0; i < names.size(); ++i) restored.buffers.push_back({names[i].name, resumed_[i].data()});
    state_ = load_training_state(config_.out_dir, *model_, restored);
    resumed_step_ = restored.step;
    spdlog::info("resuming from {} at iteration {} (best val loss {:.4f})", model_path(config_.out_dir),
                 state_.iter_num, state_.best_val_loss);
  }

  void log_setup() const {
    spdlog::info("model: {} parameters, {} layers, {} heads, n_embd {}, block_size {}, vocab {}; optimizer {}",
                 model_->params().parameter_count(), config_.n_layer, config_.n_head, config_.n_embd,
                 config_.block_size, data_->vocab().size(), optimizer_->name());
    spdlog::info(
        "data: {} train / {} val tokens ({}, vocab {}) from {}, memory-mapped from {}; {} tokens per iteration",
        data_->train().size(), data_->val().size(), to_string(data_->manifest().token_type),
        to_string(data_->vocab().kind()), config_.data_path, data_->folder(), static_cast<int64_t>(tokens_per_iter_));
    if (!world_.distributed()) {
      spdlog::info("threads: {}", omp_get_max_threads());
      return;
    }
    const auto* parallel = static_cast<const DataParallelSync*>(sync_.get());
    spdlog::info(
        "world: {} processes on {} host(s), {} per host, {} threads each; {} micro-batches of {} each; "
        "{:.1f} MB exchanged per process per iteration; optimizer state {}",
        world_.size(), world_.hosts(), world_.ranks_on_this_host(), omp_get_max_threads(),
        config_.gradient_accumulation_steps / world_.size(), config_.gradient_accumulation_steps,
        static_cast<double>(parallel->floats_exchanged_per_iteration()) * 4e-6,
        config_.zero_stage == 1 ? "sharded (ZeRO-1)" : "replicated");
  }

  bool is_eval_iteration(int64_t iter) const { return iter % config_.eval_interval == 0 || iter == config_.max_iters; }

  // nanoGPT's policy: evaluate both splits; save when val loss improves (or always), never at 0.
  void evaluate_and_checkpoint(int64_t iter) {
    if (reporter_) reporter_->clear_progress();
    const auto eval_start = Clock::now();
    const EvalBatches batches{static_cast<uint64_t>(config_.seed), iter, config_.eval_iters, config_.batch_size,
                              config_.block_size};
    const double train_loss = estimate_loss(*model_, graph_, data_->train(), Split::train, batches, batch_, world_);
    const double val_loss = estimate_loss(*model_, graph_, data_->val(), Split::val, batches, batch_, world_);
    result_.last_val_loss = val_loss;
    if (reporter_) reporter_->evaluation(iter, train_loss, val_loss, schedule_.at(iter), seconds_since(eval_start));
    if (val_loss < state_.best_val_loss || config_.always_save_checkpoint) {
      {
        const std::lock_guard lock(state_lock_);
        state_.best_val_loss = std::min(state_.best_val_loss, val_loss);
      }
      if (iter > 0) {
        save(iter, true);
        if (world_.is_root()) spdlog::info("saved checkpoint to {}", model_path(config_.out_dir));
      }
    }
  }

  void train_iteration(int64_t iter) {
    const auto iter_start = Clock::now();
    const double lr = schedule_.at(iter);
    const StepResult step = compute_step_gradient(*model_, graph_, *sync_, data_->train(), settings_, iter, batch_);
    {
      const std::lock_guard lock(state_lock_);  // one iteration's state, whole, for the stop saver
      apply_step(*model_, *optimizer_, *sync_, step, lr);
      completed_iter_ = iter + 1;
    }
    if (!step.finite())
      fail_on_every_rank(world_,
                         "training diverged at iteration " + std::to_string(iter) + ": loss " +
                             std::to_string(step.loss) + ", gradient norm " + std::to_string(step.grad_norm) +
                             " (learning rate " + std::to_string(lr) + "); the last good checkpoint in " +
                             config_.out_dir + " was kept. Try a lower learning_rate.",
                         1);
    if (config_.check_replicas) check_replicas(iter);
    const double dt = seconds_since(iter_start);
    train_seconds_ += dt;
    ++result_.iterations;
    if (reporter_) reporter_->iteration({iter, step.loss, step.grad_norm, lr, dt, exchange_seconds()});
  }

  double exchange_seconds() const {
    if (!world_.distributed()) return 0.0;
    return static_cast<const DataParallelSync*>(sync_.get())->exchange_seconds();
  }

  void check_replicas(int64_t iter) const {
    const int64_t hash = weights_hash(model_->params(), model_->params().data());
    if (world_.max(hash) != world_.min(hash))
      fail_on_every_rank(world_, "the processes' weights differ after iteration " + std::to_string(iter), 1);
  }

  // A stop signal reaching any process stops all after the same iteration; rank 0 saves there.
  bool stop_requested(int64_t next_iter) {
    const int64_t signal = world_.max(stop_signal_ ? stop_signal_->load() : 0);
    if (signal == 0) return false;
    if (reporter_) reporter_->clear_progress();
    result_.stop_signal = static_cast<int>(signal);
    save(next_iter, false);
    if (world_.is_root())
      spdlog::warn("interrupted after iteration {}: checkpoint saved to {}; continue with init_from \"resume\"",
                   next_iter - 1, model_path(config_.out_dir));
    return true;
  }

  int64_t saved_iter() {
    const std::lock_guard lock(state_lock_);
    return last_saved_iter_;
  }

  bool optimizer_sharded() const { return config_.zero_stage == 1; }

  // Under mpirun, Ctrl-C on mpirun reaches the processes as SIGCONT, then SIGTERM and SIGKILL a
  // second apart each (Open MPI's odls_base_sigkill_timeout): too soon to finish a long iteration
  // and agree on the stop. So rank 0, which holds the whole state unless it is sharded, saves the
  // last completed iteration from this thread the moment a stop signal arrives, while the
  // iteration goes on; updates happen under state_lock_, so the checkpoint is one iteration's
  // state. If the processes live to the end of the iteration, the agreed stop saves again.
  void save_when_stopped() {
    while (!finished_.load() && stop_signal_->load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (finished_.load()) return;
    const std::lock_guard lock(state_lock_);
    if (completed_iter_ == last_saved_iter_ || completed_iter_ == 0) return;  // nothing new to keep
    TrainingState state = state_;
    state.iter_num = completed_iter_;
    state.eval_done = false;
    state.train_config = to_json(config_);
    const OptimizerState optimizer{optimizer_->name(), optimizer_->step_count(), optimizer_->state()};
    try {
      save_checkpoint(config_.out_dir, *model_, data_->vocab(), &state, &optimizer);
      last_saved_iter_ = completed_iter_;
      spdlog::warn("stop requested: saved the state after iteration {} to {}; finishing the current iteration",
                   completed_iter_ - 1, model_path(config_.out_dir));
    } catch (const UserError& e) {
      spdlog::error("stop requested, but the checkpoint could not be saved: {}", e.what());
    }
  }

  // Every process takes part (the optimizer state may have to be gathered); rank 0 writes.
  void save(int64_t iter_num, bool eval_done) {
    const std::lock_guard lock(state_lock_);
    last_saved_iter_ = iter_num;
    state_.iter_num = iter_num;
    state_.eval_done = eval_done;
    state_.train_config = to_json(config_);
    if (gathered_.empty()) gathered_ = whole_state_buffers(*optimizer_, model_->params().padded_floats());
    const OptimizerState optimizer = gather_optimizer_state(world_, *optimizer_, gathered_);
    if (world_.is_root()) save_checkpoint(config_.out_dir, *model_, data_->vocab(), &state_, &optimizer);
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
  const World& world_;
  Clock::time_point start_;
  const bool resume_;
  std::unique_ptr<Dataset> data_;
  std::unique_ptr<Gpt> model_;
  std::unique_ptr<GradientSync> sync_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<AlignedBuffer<float>> resumed_, gathered_;  // whole optimizer state: loaded on rank 0; gathered for saves
  int64_t resumed_step_ = 0;
  TrainingState state_;
  StepSettings settings_{};
  LrSchedule schedule_ = lr_schedule(config_);
  double tokens_per_iter_ = 0;
  std::unique_ptr<RunReporter> reporter_;  // rank 0 only
  Arena arena_{64u << 20};
  Graph graph_{arena_};
  Batch batch_;
  TrainResult result_;
  int64_t last_saved_iter_ = -1;
  std::mutex state_lock_;       // guards weights, optimizer state and state_ against the stop saver
  int64_t completed_iter_ = 0;  // iterations whose update is applied (the next one to run)
  std::atomic<bool> finished_{false};
  std::thread stop_saver_;
  double train_seconds_ = 0.0;
};

}  // namespace

TrainResult run_training(const TrainConfig& config, const std::atomic<int>* stop_signal) {
  TrainingRun run(config, stop_signal);
  return run.run();
}

}  // namespace gpt
