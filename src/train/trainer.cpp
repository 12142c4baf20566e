#include "train/trainer.h"

#include <omp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
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
#include "core/copy_values.h"
#include "data/dataset.h"
#include "distributed/world.h"
#include "io/checkpoint.h"
#include "kernels/fma_probe.h"
#include "kernels/gemm.h"
#include "model/gpt.h"
#include "train/distributed_state.h"
#include "train/evaluate.h"
#include "train/gradient_sync.h"
#include "train/lr_schedule.h"
#include "train/optimizer.h"
#include "train/run_reporter.h"
#include "train/time_budget.h"
#include "train/train_step.h"

namespace gpt {

namespace {

// Each dtype's peak is probed once per process (a process may run several trainings).
double cached_peak_gflops(Dtype dtype) {
  if (dtype == Dtype::bfloat16) {
    static const double bfloat16_peak = measure_peak_gflops(Dtype::bfloat16, 0.2);
    return bfloat16_peak;
  }
  static const double float32_peak = measure_peak_gflops(Dtype::float32, 0.2);
  return float32_peak;
}

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

// The root's text on every process.
std::string broadcast_text(const World& world, std::string text) {
  if (!world.distributed()) return text;
  int64_t size = static_cast<int64_t>(text.size());
  world.broadcast(&size, sizeof size);
  text.resize(static_cast<std::size_t>(size));
  if (size > 0) world.broadcast(text.data(), text.size());
  return text;
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
  TrainingRun(const TrainConfig& config, const std::atomic<int>* stop_signal,
              const std::function<void()>& after_evaluation)
      : config_(config),
        stop_signal_(stop_signal),
        after_evaluation_(after_evaluation),
        world_(World::instance()),
        start_(Clock::now()),
        resume_(config.init_from == "resume"),
        fine_tune_(config.init_from != "resume" && config.init_from != "scratch") {
    // Rank 0 prepares text first; the others then find it prepared (on a shared file system) or
    // prepare their host's copy.
    // Rank 0 also reads the model a resumed or fine-tuned run goes on from (its vocabulary and
    // architecture go to every process; its weights follow once the model is built).
    std::string continued;
    run_agreeing(world_, [&] {
      if (!world_.is_root()) return;
      open_data();
      continued = read_continued_model();
    });
    continued = broadcast_text(world_, continued);
    run_agreeing(world_, [&] {
      if (!world_.is_root()) open_data();
      set_up_locally(continued);
    });
    if (resume_) share_resumed_state(world_, model_->params(), state_, *optimizer_, resumed_, resumed_step_);
    if (fine_tune_) world_.broadcast(model_->params().data(), model_->params().padded_floats() * sizeof(float));
    settings_ = {config_.batch_size, config_.block_size, config_.gradient_accumulation_steps, config_.grad_clip,
                 static_cast<uint64_t>(config_.seed)};
    tokens_per_iter_ =
        static_cast<double>(config_.batch_size * config_.block_size * config_.gradient_accumulation_steps);
    // MFU: nanoGPT's flop estimate per iteration against the measured peaks of all processes
    // (FMA or, for bfloat16 products, VDPBF16PS).
    const double peak_gflops = cached_peak_gflops(config_.matmul_dtype());
    if (world_.is_root()) {
      write_file_atomically((std::filesystem::path(config_.out_dir) / "config.json").string(),
                            to_json(config_).dump(2) + "\n");
      reporter_ =
          std::make_unique<RunReporter>(config_, tokens_per_iter_, model_->flops_per_token() * tokens_per_iter_ * 1e-9,
                                        peak_gflops * world_.size(), resume_);
      log_setup();
      record_start();
    }
    elapsed_before_ = state_.elapsed_seconds;
    if (budget_seconds_ > 0) {
      if (reporter_) reporter_->set_budget(budget_seconds_);
      hold_until_planned();
      if (state_.planned_iters > 0) set_schedule_length(state_.planned_iters);  // resumed: as measured at first
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
      if (iter >= config_.max_iters || out_of_patience_) break;
      train_iteration(iter);
      ++iter;
      if (stop_requested(iter)) break;
      if (budget_seconds_ > 0) keep_to_budget(iter);
    }
    if (reporter_) reporter_->clear_progress();
    if (result_.stop_signal == 0 && !out_of_patience_ && saved_iter() != iter) {
      save(iter, true);
      if (world_.is_root()) spdlog::info("saved final checkpoint to {}", model_path(config_.out_dir));
    }
    return finish(iter);
  }

 private:
  // What each process does on its own; run_agreeing makes a failure anywhere a failure everywhere.
  // Rank 0: {"vocab", "model"} of the checkpoint the run continues (resume) or starts from
  // (fine-tuning, which keeps it in base_ for its weights); "" for a run from scratch.
  std::string read_continued_model() {
    if (!resume_ && !fine_tune_) return "";
    std::error_code ec;
    if (fine_tune_ && !std::filesystem::exists(config_.init_from, ec))
      throw UserError("\"init_from\": \"" + config_.init_from +
                      "\" is neither \"scratch\", \"resume\" nor an existing checkpoint to fine-tune (a "
                      "model.safetensors file or a run's out_dir)");
    base_ = std::make_unique<LoadedModel>(load_model(resume_ ? config_.out_dir : config_.init_from));
    return nlohmann::json{{"vocab", base_->vocab.to_json()}, {"model", base_->model->config().to_json()}}.dump();
  }

  // Fine-tuning: the checkpoint's architecture (the config's is overridden, with a note) and
  // vocabulary; the corpus must be written in that vocabulary.
  void adopt_continued_model(const std::string& continued) {
    const nlohmann::json j = nlohmann::json::parse(continued);
    const Vocab vocab = Vocab::from_json(j["vocab"].get<std::string>(), config_.init_from);
    if (fine_tune_) {
      const nlohmann::json& m = j["model"];
      const int64_t before[] = {config_.n_layer, config_.n_head, config_.n_embd, config_.block_size};
      config_.n_layer = m["n_layer"].get<int64_t>();
      config_.n_head = m["n_head"].get<int64_t>();
      config_.n_embd = m["n_embd"].get<int64_t>();
      config_.block_size = m["block_size"].get<int64_t>();
      config_.bias = m["bias"].get<bool>();
      const int64_t after[] = {config_.n_layer, config_.n_head, config_.n_embd, config_.block_size};
      if (world_.is_root() && !std::equal(std::begin(before), std::end(before), std::begin(after)))
        spdlog::info(
            "fine-tuning {}: its architecture ({} layers, {} heads, n_embd {}, block_size {}) replaces the "
            "config's",
            config_.init_from, config_.n_layer, config_.n_head, config_.n_embd, config_.block_size);
      data_->use_vocab(vocab, "cannot fine-tune " + config_.init_from + " on " + config_.data_path);
    } else {
      data_->use_vocab(vocab, "cannot resume: the vocabulary of " + config_.data_path + " differs from the one in " +
                                  model_path(config_.out_dir));
    }
  }

  void set_up_locally(const std::string& continued) {
    if (!continued.empty()) adopt_continued_model(continued);
    data_->check_fits(config_.block_size, true);
    if (config_.threads > 0) omp_set_num_threads(static_cast<int>(config_.threads));
    if (config_.gradient_accumulation_steps % world_.size() != 0)
      throw UserError("gradient_accumulation_steps (" + std::to_string(config_.gradient_accumulation_steps) +
                      ") must be divisible by the number of processes (" + std::to_string(world_.size()) +
                      "): it counts the micro-batches of an iteration over all of them");
    if (world_.is_root()) create_out_dir();
    model_ = std::make_unique<Gpt>(config_.model_config(data_->vocab().size()));
    if (!resume_ && !fine_tune_) model_->init_weights(static_cast<uint64_t>(config_.seed));
    if (fine_tune_ && world_.is_root())
      copy_values(model_->params().data(), base_->model->params().data(),
                  static_cast<int64_t>(model_->params().padded_floats()));
    model_->set_dropout(static_cast<float>(config_.dropout));  // a training setting: a resumed run uses the config's
    model_->set_matmul_dtype(config_.matmul_dtype());
    if (world_.distributed())
      sync_ = std::make_unique<DataParallelSync>(world_, model_->params(), config_.zero_stage == 1);
    else
      sync_ = std::make_unique<LocalGradientSync>();
    optimizer_ = make_optimizer(config_, model_->params(), sync_->optimizer_shard(model_->params()));
    resumed_ = whole_state_buffers(*optimizer_, resume_ ? model_->params().padded_floats() : 0);
    if (resume_ && world_.is_root()) load_checkpoint();
    base_.reset();
  }

  void open_data() {
    data_ = std::make_unique<Dataset>(Dataset::open(config_.corpus(), config_.cache_dir, stop_signal_));
  }

  void create_out_dir() const {
    std::error_code ec;
    std::filesystem::create_directories(config_.out_dir, ec);
    if (ec) throw UserError("cannot create out_dir " + config_.out_dir + ": " + ec.message(), 1);
  }

  // Rank 0: the checkpoint's weights into the model, its optimizer state into resumed_.
  void load_checkpoint() {
    LoadedModel& loaded = *base_;
    check_resume_matches(loaded.model->config(), config_, loaded.path);
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

  void record_start() const {
    reporter_->start({{"processes", world_.size()},
                      {"threads", omp_get_max_threads()},
                      {"parameters", model_->params().parameter_count()},
                      {"vocab_size", data_->vocab().size()},
                      {"train_tokens", data_->train().size()},
                      {"val_tokens", data_->val().size()},
                      {"data", data_->folder()},
                      {"iter", state_.iter_num},
                      {"elapsed_s", state_.elapsed_seconds}});
  }

  void log_setup() const {
    spdlog::info("model: {} parameters, {} layers, {} heads, n_embd {}, block_size {}, vocab {}; optimizer {}",
                 model_->params().parameter_count(), config_.n_layer, config_.n_head, config_.n_embd,
                 config_.block_size, data_->vocab().size(), optimizer_->name());
    spdlog::info("{}", describe_matmul(config_.matmul_dtype()));
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
    costs_.evaluation = seconds_since(eval_start);
    if (reporter_) reporter_->evaluation(iter, train_loss, val_loss, schedule_.at(iter), costs_.evaluation, elapsed());
    count_patience(iter, val_loss);
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
    if (world_.is_root() && after_evaluation_) {
      try {
        after_evaluation_();
      } catch (const UserError& e) {
        spdlog::warn("{}", e.what());
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
    iteration_seconds_.push_back(dt);
    ++result_.iterations;
    if (reporter_) reporter_->iteration({iter, step.loss, step.grad_norm, lr, dt, exchange_seconds(), elapsed()});
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

  double elapsed() const { return elapsed_before_ + seconds_since(start_); }

  // patience: evaluations in a row without a new best val loss; the best checkpoint is kept.
  void count_patience(int64_t iter, double val_loss) {
    {
      const std::lock_guard lock(state_lock_);
      state_.evals_since_best = val_loss < state_.best_val_loss ? 0 : state_.evals_since_best + 1;
    }
    if (config_.patience == 0 || iter == 0 || state_.evals_since_best < config_.patience) return;
    out_of_patience_ = true;
    if (world_.is_root())
      spdlog::info(
          "no new best val loss in {} evaluations: stopping early at iteration {}; the best checkpoint ({:.4f}) "
          "is kept",
          state_.evals_since_best, iter, state_.best_val_loss);
  }

  // max_time. Once the first iterations are measured, the schedule's length is fixed from the
  // step time so that the decay ends with the budget (evaluations and checkpoints included); then
  // the run goes on, at min_lr once the decay is done, until the time left only covers the final
  // evaluation and checkpoint. The step time varies on a shared machine, so the schedule ends a
  // little early or late, but the run ends within its budget. All processes agree on both.
  void keep_to_budget(int64_t iter) {
    const bool measured = static_cast<int64_t>(iteration_seconds_.size()) >= kPlanAfterIterations &&
                          train_seconds_ >= kPlanAfterBudgetShare * budget_seconds_;
    if (state_.planned_iters == 0 && measured) {
      costs_.iteration = median_iteration_seconds();
      if (costs_.save == 0) costs_.save = estimated_save_seconds();
      costs_.evaluation = expected_evaluation_seconds();
      const int64_t planned = world_.min(plan_iterations(budget_seconds_ * kBudgetUse, elapsed(), iter,
                                                         kMaxPlannedIterations, config_.eval_interval, costs_));
      set_schedule_length(std::max<int64_t>(planned, iter + 1));
      if (world_.is_root())
        spdlog::info(
            "max_time {}: {:.1f} ms per iteration, {:.1f} s per evaluation and {:.1f} s per checkpoint "
            "measured: the learning rate decays until iteration {}",
            format_duration(budget_seconds_), costs_.iteration * 1e3, costs_.evaluation, costs_.save,
            config_.lr_decay_iters);
      return;
    }
    const double needed = expected_evaluation_seconds() + (costs_.save > 0 ? costs_.save : estimated_save_seconds());
    const bool out_of_time = world_.max(elapsed() + needed >= budget_seconds_ * kBudgetUse ? 1 : 0) != 0;
    if (!out_of_time) return;
    if (world_.is_root())
      spdlog::info(
          "max_time: ending at iteration {} (decay planned until {}); to repeat this run without a budget: "
          "--max_iters {} --lr_decay_iters {}",
          iter, config_.lr_decay_iters, iter, config_.lr_decay_iters);
    config_.max_iters = iter;  // the loop evaluates and saves here, then ends
  }

  // The run has no set end (the budget ends it), and until the first iterations are measured the
  // learning rate stays at its peak after the warmup (a cosine over an endless run).
  void hold_until_planned() {
    config_.max_iters = kMaxPlannedIterations;
    config_.lr_decay_iters = kMaxPlannedIterations;
    schedule_ = lr_schedule(config_);
  }

  // The last of the planned iterations (number iterations - 1) trains at min_lr, however few
  // there are.
  void set_schedule_length(int64_t iterations) {
    state_.planned_iters = iterations;
    if (config_.decay_lr) config_.lr_decay_iters = std::max(iterations - 1, config_.warmup_iters + 1);
    schedule_ = lr_schedule(config_);
    if (reporter_) reporter_->set_max_iters(iterations);
  }

  // The first iteration warms caches and allocators: the median of the others.
  double median_iteration_seconds() const {
    std::vector<double> times(iteration_seconds_.begin() + (iteration_seconds_.size() > 1 ? 1 : 0),
                              iteration_seconds_.end());
    if (times.empty()) return 0;
    std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2), times.end());
    return times[times.size() / 2];
  }

  // The last evaluation's time, but the only one so far may be the first, slowed by warm-up: at
  // most twice what its forward passes cost at the step time (a step is about three forwards).
  double expected_evaluation_seconds() const {
    const double step = median_iteration_seconds();
    if (step == 0) return costs_.evaluation;
    return std::min(costs_.evaluation, 2.0 * 2.0 * static_cast<double>(config_.eval_iters) * step /
                                           (3.0 * static_cast<double>(config_.gradient_accumulation_steps)));
  }

  // Before the first checkpoint: the weights and optimizer state at 100 MB/s.
  double estimated_save_seconds() const {
    const double bytes = static_cast<double>(model_->params().padded_floats()) * sizeof(float) *
                         (1.0 + static_cast<double>(optimizer_->state().size()));
    return 0.05 + bytes / 100e6;
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
    state.elapsed_seconds = elapsed();
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
    state_.elapsed_seconds = elapsed();
    const auto save_start = Clock::now();
    if (gathered_.empty()) gathered_ = whole_state_buffers(*optimizer_, model_->params().padded_floats());
    const OptimizerState optimizer = gather_optimizer_state(world_, *optimizer_, gathered_);
    if (world_.is_root()) save_checkpoint(config_.out_dir, *model_, data_->vocab(), &state_, &optimizer);
    costs_.save = seconds_since(save_start);
  }

  TrainResult finish(int64_t iter) {
    result_.final_iter = iter;
    result_.best_val_loss = state_.best_val_loss;
    result_.planned_iters = state_.planned_iters;
    result_.stopped_early = out_of_patience_;
    result_.wall_seconds = seconds_since(start_);
    result_.tokens_per_second =
        train_seconds_ > 0 ? tokens_per_iter_ * static_cast<double>(result_.iterations) / train_seconds_ : 0;
    return result_;
  }

  TrainConfig config_;  // a copy: max_time fixes max_iters and lr_decay_iters once measured
  const std::atomic<int>* stop_signal_;
  std::function<void()> after_evaluation_;
  const World& world_;
  Clock::time_point start_;
  const bool resume_, fine_tune_;
  std::unique_ptr<LoadedModel> base_;  // rank 0, during setup: the checkpoint the run continues
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
  // max_time
  // Measured over at least 10 iterations and 3% of the budget: long enough for a steady step time.
  static constexpr int64_t kPlanAfterIterations = 10;
  static constexpr double kPlanAfterBudgetShare = 0.03;
  static constexpr int64_t kMaxPlannedIterations = int64_t{1} << 40;
  static constexpr double kBudgetUse = 0.99;  // a margin for the variation of the step time
  double budget_seconds_ = parse_duration(config_.max_time).value_or(0.0);
  double elapsed_before_ = 0;  // of the run's earlier parts, when resumed
  RunCosts costs_{0, 0, 0};
  std::vector<double> iteration_seconds_;
  bool out_of_patience_ = false;
  std::mutex state_lock_;       // guards weights, optimizer state and state_ against the stop saver
  int64_t completed_iter_ = 0;  // iterations whose update is applied (the next one to run)
  std::atomic<bool> finished_{false};
  std::thread stop_saver_;
  double train_seconds_ = 0.0;
};

}  // namespace

TrainResult run_training(const TrainConfig& config, const std::atomic<int>* stop_signal,
                         const std::function<void()>& after_evaluation) {
  TrainingRun run(config, stop_signal, after_evaluation);
  return run.run();
}

}  // namespace gpt
