#include "train/trainer.h"

#include <omp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/check.h"
#include "io/run_folder.h"
#include "kernels/fma_probe.h"
#include "kernels/gemm.h"
#include "train/distributed_state.h"
#include "train/evaluate.h"
#include "train/lr_schedule.h"
#include "train/progress.h"
#include "train/run_reporter.h"
#include "train/run_setup.h"
#include "train/stop_saver.h"
#include "train/time_budget.h"
#include "train/train_step.h"
#include "train/weight_average.h"

namespace gpt {

namespace {

// Each dtype's peak is probed once per process (a process may run several trainings).
double cached_peak_gflops(Dtype dtype) {
  static double peaks[2] = {0, 0};
  double& peak = peaks[dtype == Dtype::bfloat16 ? 1 : 0];
  if (peak == 0) {
    spdlog::info("measuring this CPU's peak for {} products (for MFU, 0.2 s)", dtype_name(dtype));
    peak = measure_peak_gflops(dtype, 0.2);
  }
  return peak;
}

[[noreturn]] void fail_on_every_rank(const World& world, const std::string& message) {
  if (!world.distributed()) throw UserError(message, ExitCode::runtime);
  throw AgreedFailure{message, static_cast<int>(ExitCode::runtime), world.is_root()};
}

// FNV-1a over the weights' bytes: equal on every process exactly when the weights are.
int64_t weights_hash(const ParamStore& params) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(params.data());
  for (std::size_t i = 0; i < params.padded_floats() * sizeof(float); ++i) h = (h ^ bytes[i]) * 0x100000001b3ull;
  return static_cast<int64_t>(h >> 1);
}

// A save after an evaluation: the model's weights, and the resume point's weights and optimizer state.
double checkpoint_bytes(const RunParts& run) {
  return static_cast<double>(run.model->params().padded_floats()) * sizeof(float) *
         (2.0 + static_cast<double>(run.optimizer->state().size()));
}

void log_run_setup(const RunParts& run, const World& world, double tokens_per_iter) {
  const TrainConfig& c = run.config;
  spdlog::info("model: {} parameters, {} layers, {} heads, n_embd {}, block_size {}, vocab {}; optimizer {}{}",
               run.model->params().parameter_count(), c.model.n_layer, c.model.n_head, c.model.n_embd,
               c.model.block_size, run.data->vocab().size(), run.optimizer->name(),
               c.ema_decay > 0 ? fmt::format(", evaluating and saving the weights' average (ema_decay {})", c.ema_decay)
                               : std::string());
  if (c.ema_decay > 0 && c.max_time.seconds == 0 && 1.0 / (1.0 - c.ema_decay) > static_cast<double>(c.max_iters))
    spdlog::warn(
        "ema_decay {} averages about the last {:.0f} steps, more than the run's {} iterations: the model will be "
        "the mean of every step's weights, the first ones included",
        c.ema_decay, 1.0 / (1.0 - c.ema_decay), c.max_iters);
  spdlog::info("{}", describe_matmul(c.matmul_dtype()));
  spdlog::info(
      "data: {} train / {} val tokens ({}, vocab {}) from {}, token files in {}; {} tokens per iteration, windows {}",
      run.data->train().size(), run.data->val().size(), to_string(run.data->manifest().token_type),
      to_string(run.data->vocab().kind()), c.data_path, run.data->folder(), static_cast<int64_t>(tokens_per_iter),
      c.data_order == DataOrder::epochs ? "in epochs (each once per epoch)" : "at random offsets");
  if (!world.distributed()) {
    spdlog::info("threads: {}", omp_get_max_threads());
    return;
  }
  spdlog::info(
      "world: {} processes on {} host(s), {} per host, {} threads each; each process computes {} of an iteration's "
      "{} micro-batches; {:.1f} MB exchanged per process per iteration; optimizer state {}",
      world.size(), world.hosts(), world.ranks_on_this_host(), omp_get_max_threads(),
      c.gradient_accumulation_steps / world.size(), c.gradient_accumulation_steps,
      static_cast<double>(run.sync->floats_exchanged_per_iteration()) * 4e-6,
      run.optimizer->shard().size() < static_cast<int64_t>(run.model->params().padded_floats()) ? "sharded (ZeRO-1)"
                                                                                                : "replicated");
}

nlohmann::ordered_json start_record(const RunParts& run, const World& world) {
  return {{"processes", world.size()},
          {"threads", omp_get_max_threads()},
          {"parameters", run.model->params().parameter_count()},
          {"vocab_size", run.data->vocab().size()},
          {"train_tokens", run.data->train().size()},
          {"val_tokens", run.data->val().size()},
          {"data", run.data->folder()},
          {"iter", run.state.iter_num},
          {"elapsed_s", run.state.elapsed_seconds}};
}

// One run of `gpt train` in one process of a world of one or more: from its parts, set up, it
// loops over iterations, each an evaluation-and-checkpoint decision and a training step. Every
// process computes the same values; rank 0 alone writes.
class TrainingLoop {
 public:
  // `started`: the clock's reading when the run's setup began (the budget counts setup too).
  TrainingLoop(RunParts run, const RunContext& context, double started);
  TrainResult run();

 private:
  bool evaluate_and_checkpoint(int64_t iter);
  void train_iteration(int64_t iter);
  bool stop_requested(int64_t next_iter);
  void count_patience(int64_t iter, double val_loss);
  void keep_to_budget(int64_t iter);
  void set_schedule_length(int64_t iterations, int64_t next_iter);
  Gpt& evaluated_model();
  void checkpoint_evaluated(int64_t iter, double val_loss, Gpt& evaluated);
  void save_resume(int64_t iter_num, bool eval_done);
  StopSnapshot snapshot(int64_t next_iter) const;
  TrainResult finish(int64_t iter);
  // The clock is read once at the end of each timed piece of work (an iteration, an evaluation,
  // a save), and each piece's time runs from the previous reading: every second the run spends
  // is counted in exactly one of them, so the budget's plan sees all of it.
  double read_clock() { return now_ = context_.clock.seconds(); }
  double elapsed() const { return elapsed_before_ + now_ - start_; }
  bool root() const { return context_.world.is_root(); }
  SavedModel saved_model(Gpt& model) const { return {model, run_.data->vocab(), arithmetic_}; }
  SavedModel saved_model() const { return saved_model(*run_.model); }

  RunParts run_;
  TrainConfig& config_ = run_.config;  // max_time fixes max_iters and lr_decay_iters once measured
  TrainingState& state_ = run_.state;
  const RunContext& context_;
  const World& world_ = context_.world;
  double now_;  // the last reading
  const double start_;
  const double elapsed_before_ = state_.elapsed_seconds;  // of the run's earlier parts, when resumed
  const double tokens_per_iter_;
  const StepSettings settings_;
  const Bf16Arithmetic arithmetic_ = bf16_arithmetic();  // as set up for this run
  LrSchedule schedule_ = lr_schedule(config_);
  std::unique_ptr<RunReporter> reporter_;  // rank 0 only
  std::unique_ptr<BudgetPlanner> budget_;  // max_time only
  std::unique_ptr<StopSaver> saver_;
  AveragedOptimizer* const average_ = dynamic_cast<AveragedOptimizer*>(run_.optimizer.get());  // ema_decay
  std::unique_ptr<Gpt> average_model_;  // ema_decay: the average, gathered for each evaluation
  bool saver_watches_ = false;          // rank 0 of several processes with the whole optimizer state
  Arena arena_{64u << 20};
  Graph graph_{arena_};
  Batch batch_;
  TrainResult result_;
  bool out_of_patience_ = false;
  double train_seconds_ = 0.0;
};

TrainingLoop::TrainingLoop(RunParts run, const RunContext& context, double started)
    : run_(std::move(run)),
      context_(context),
      now_(context.clock.seconds()),
      start_(started),
      tokens_per_iter_(
          static_cast<double>(config_.batch_size * config_.model.block_size * config_.gradient_accumulation_steps)),
      settings_(step_settings(config_)) {
  // MFU: nanoGPT's flop estimate per iteration against the measured peaks of all processes.
  const double peak_gflops = cached_peak_gflops(config_.matmul_dtype());
  if (root()) {
    write_file_atomically(run_file(config_.out_dir, kConfigFile), to_json(config_).dump(2) + "\n");
    reporter_ = std::make_unique<RunReporter>(config_, tokens_per_iter_,
                                              run_.model->flops_per_token() * tokens_per_iter_ * 1e-9,
                                              peak_gflops * world_.size(), run_.resumed());
    log_run_setup(run_, world_, tokens_per_iter_);
    reporter_->start(start_record(run_, world_));
  }
  if (config_.max_time.seconds > 0) {
    budget_ = std::make_unique<BudgetPlanner>(
        config_.max_time.seconds, BudgetPlanner::Run{config_.eval_interval, config_.eval_iters,
                                                     config_.gradient_accumulation_steps, checkpoint_bytes(run_)});
    if (reporter_) reporter_->set_budget(config_.max_time.seconds);
    // No set end (the budget ends the run), and until the first iterations are measured the
    // learning rate stays at its peak after the warmup (a cosine over an endless run).
    config_.max_iters = config_.lr_decay_iters = BudgetPlanner::kUnplanned;
    schedule_ = lr_schedule(config_);
    if (state_.planned_iters > 0) set_schedule_length(state_.planned_iters, state_.iter_num);  // resumed: as measured
  }
  if (average_) {
    average_model_ = std::make_unique<Gpt>(run_.model->config());
    average_model_->set_matmul_dtype(run_.model->matmul_dtype());
  }
  saver_watches_ = root() && world_.distributed() && config_.zero_stage == 0 && context_.stop_signal;
  saver_ = std::make_unique<StopSaver>(saver_watches_ ? context_.stop_signal : nullptr, [this](const StopSnapshot& s) {
    const OptimizerState optimizer{run_.optimizer->name(), run_.optimizer->step_count(), run_.optimizer->state()};
    save_resume_point(config_.out_dir, saved_model(), s, optimizer);
  });
  if (run_.resumed()) saver_->save_now(state_.iter_num, [] {});  // the resume point it was loaded from
  if (saver_watches_) saver_->publish(snapshot(state_.iter_num));
}

TrainResult TrainingLoop::run() {
  result_.last_val_loss = std::numeric_limits<double>::quiet_NaN();
  int64_t iter = state_.iter_num;
  const int64_t first_iter = iter;
  if (stop_requested(iter)) return finish(iter);  // a signal during set-up
  for (;;) {
    const bool eval_already_logged = run_.resumed() && iter == first_iter && state_.eval_done;
    const bool eval_due = iter % config_.eval_interval == 0 || iter == config_.max_iters;
    if (eval_due && !eval_already_logged && !evaluate_and_checkpoint(iter)) {
      stop_requested(iter);  // the signal that cut the evaluation short: stop as if it came before it
      break;
    }
    if (iter >= config_.max_iters || out_of_patience_) break;
    train_iteration(iter);
    ++iter;
    if (stop_requested(iter)) break;
    if (budget_) keep_to_budget(iter);
  }
  if (reporter_) reporter_->clear_progress();
  // Rank 0's saver thread may have saved this iteration on its own: every process decides alike.
  if (result_.stop_signal == 0 && world_.max(saver_->last_saved_iter() != iter ? 1 : 0) != 0) {
    save_resume(iter, true);
    read_clock();
    if (root()) spdlog::info("saved the last iteration to {}", resume_path(config_.out_dir));
  }
  return finish(iter);
}

// nanoGPT's policy: evaluate both splits; when val loss improves (or always), the weights become
// the run's model and, except at 0 where there is nothing to resume, a resume point. False when a
// stop signal cut the evaluation short (nothing recorded).
bool TrainingLoop::evaluate_and_checkpoint(int64_t iter) {
  if (reporter_) reporter_->clear_progress();
  const double eval_start = now_;
  const EvalBatches batches{static_cast<uint64_t>(config_.seed), iter, config_.eval_iters, config_.batch_size,
                            config_.model.block_size};
  Gpt& model = evaluated_model();
  const std::optional<double> train_estimate =
      estimate_loss(model, graph_, run_.data->train(), Split::train, batches, batch_, world_, context_.stop_signal);
  if (!train_estimate) return false;
  const std::optional<double> val_estimate =
      estimate_loss(model, graph_, run_.data->val(), Split::val, batches, batch_, world_, context_.stop_signal);
  if (!val_estimate) return false;
  const double train_loss = *train_estimate, val_loss = *val_estimate;
  result_.last_val_loss = val_loss;
  result_.last_eval_iter = iter;
  const double seconds = read_clock() - eval_start;
  if (budget_) budget_->record_evaluation(seconds);
  if (reporter_) reporter_->evaluation(iter, train_loss, val_loss, schedule_.at(iter), seconds, elapsed());
  count_patience(iter, val_loss);
  const bool improved = val_loss < state_.best_val_loss;
  if (improved) {
    state_.best_val_loss = val_loss;
    state_.best_iter = iter;
  }
  if (improved || config_.always_save_checkpoint) checkpoint_evaluated(iter, val_loss, model);
  if (root() && context_.after_evaluation) {
    try {
      context_.after_evaluation();
    } catch (const UserError& e) {
      spdlog::warn("{}", e.what());
    }
  }
  return true;
}

void TrainingLoop::train_iteration(int64_t iter) {
  const double iter_start = now_;
  const double lr = schedule_.at(iter);
  Gpt& model = *run_.model;
  const StepResult step = compute_step_gradient(model, graph_, *run_.sync, run_.data->train(), settings_, iter, batch_);
  saver_->apply([&] { apply_step(model, *run_.optimizer, *run_.sync, step, lr); },
                saver_watches_ ? snapshot(iter + 1) : StopSnapshot{});
  if (!step.finite())
    fail_on_every_rank(world_, "training diverged at iteration " + std::to_string(iter) + ": loss " +
                                   std::to_string(step.loss) + ", gradient norm " + std::to_string(step.grad_norm) +
                                   " (learning rate " + std::to_string(lr) + "); the last good checkpoint in " +
                                   config_.out_dir + " was kept. Try a lower learning_rate.");
  if (config_.check_replicas) {
    const int64_t hash = weights_hash(model.params());
    if (world_.max(hash) != world_.min(hash))
      fail_on_every_rank(world_, "the processes' weights differ after iteration " + std::to_string(iter));
  }
  const double seconds = read_clock() - iter_start;
  train_seconds_ += seconds;
  if (budget_) budget_->record_iteration(seconds);
  ++result_.iterations;
  if (reporter_)
    reporter_->iteration({iter, step.loss, step.grad_norm, lr, seconds, run_.sync->exchange_seconds(), elapsed()});
}

// A stop signal reaching any process stops all after the same iteration; rank 0 saves there.
// Before this process's first iteration there is nothing new to save: the run stops at once.
bool TrainingLoop::stop_requested(int64_t next_iter) {
  const int64_t signal = world_.max(context_.stop_signal ? context_.stop_signal->load() : 0);
  if (signal == 0) return false;
  if (reporter_) reporter_->clear_progress();
  result_.stop_signal = static_cast<int>(signal);
  if (result_.iterations == 0) {
    if (root()) spdlog::warn("interrupted before the first iteration: nothing new to save");
    return true;
  }
  save_resume(next_iter, false);
  read_clock();
  if (root())
    spdlog::warn("interrupted after iteration {}: saved to {}; continue with init_from \"resume\"", next_iter - 1,
                 resume_path(config_.out_dir));
  return true;
}

// patience: evaluations in a row without a new best val loss; the best checkpoint is kept.
void TrainingLoop::count_patience(int64_t iter, double val_loss) {
  state_.evals_since_best = val_loss < state_.best_val_loss ? 0 : state_.evals_since_best + 1;
  if (config_.patience == 0 || iter == 0 || state_.evals_since_best < config_.patience) return;
  out_of_patience_ = true;
  if (root())
    spdlog::info(
        "no new best val loss in {} evaluations: stopping early at iteration {}; the best checkpoint ({:.4f}) is kept",
        state_.evals_since_best, iter, state_.best_val_loss);
}

// max_time. Once the first iterations are measured, the schedule's length is fixed from the
// step time so that the decay ends with the budget (evaluations and checkpoints included); then
// the run goes on, at min_lr once the decay is done, until the time left only covers the final
// evaluation and checkpoint. The step time varies on a shared machine, so the schedule ends a
// little early or late, but the run ends within its budget. All processes agree on both.
void TrainingLoop::keep_to_budget(int64_t iter) {
  if (state_.planned_iters == 0 && budget_->measured()) {
    set_schedule_length(world_.min(budget_->plan(elapsed(), iter)), iter);
    const RunCosts& costs = budget_->costs();
    if (root())
      spdlog::info(
          "max_time {}: {:.1f} ms per iteration, {:.1f} s per evaluation and {:.1f} s per checkpoint measured: the "
          "learning rate decays until iteration {}",
          format_duration(budget_->budget_seconds()), costs.iteration * 1e3, costs.evaluation, costs.save,
          config_.lr_decay_iters);
    return;
  }
  if (world_.max(budget_->out_of_time(elapsed()) ? 1 : 0) == 0) return;
  if (root())
    spdlog::info(
        "max_time: ending at iteration {} (decay planned until {}); to repeat this run without a budget: "
        "--max_iters {} --lr_decay_iters {}",
        iter, config_.lr_decay_iters, iter, config_.lr_decay_iters);
  config_.max_iters = iter;  // the loop evaluates and saves here, then ends
}

// The last of the planned iterations (number iterations - 1) trains at min_lr, however few
// there are. `next_iter`: the iteration to run next, for the stop saver's snapshot.
void TrainingLoop::set_schedule_length(int64_t iterations, int64_t next_iter) {
  state_.planned_iters = iterations;
  if (config_.decay_lr) config_.lr_decay_iters = std::max(iterations - 1, config_.warmup_iters + 1);
  schedule_ = lr_schedule(config_);
  if (reporter_) reporter_->set_max_iters(iterations);
  if (saver_ && saver_watches_) saver_->publish(snapshot(next_iter));
}

// The loop state a checkpoint taken before iteration `next_iter` records.
StopSnapshot TrainingLoop::snapshot(int64_t next_iter) const {
  StopSnapshot s = state_;
  s.iter_num = next_iter;
  s.eval_done = false;
  s.train_config = to_json(config_);
  s.elapsed_seconds = elapsed();
  return s;
}

// What evaluations measure and the run's model holds: the weights, or with ema_decay their
// average, gathered from the processes' shards of it.
Gpt& TrainingLoop::evaluated_model() {
  if (!average_) return *run_.model;
  average_->copy_average(average_model_->params());
  run_.sync->share_parameters(average_model_->params());
  return *average_model_;
}

// The weights just evaluated become the run's model (rank 0 writes it), and a resume point.
void TrainingLoop::checkpoint_evaluated(int64_t iter, double val_loss, Gpt& evaluated) {
  const double save_start = now_;
  // The resume point first: in a folder from before resume.safetensors, model.safetensors held the
  // train state's name until now.
  if (iter > 0) save_resume(iter, true);
  if (root()) save_best_model(config_.out_dir, saved_model(evaluated), iter, val_loss);
  read_clock();
  // At 0 the model alone is written: the budget plans with whole checkpoints.
  if (budget_ && iter > 0) budget_->record_save(now_ - save_start);
  if (root())
    spdlog::info("saved checkpoint to {}{}", model_path(config_.out_dir),
                 iter > 0 ? " and " + resume_path(config_.out_dir) : std::string());
}

// The resume point. Every process takes part (the optimizer state may have to be gathered); rank 0
// writes.
void TrainingLoop::save_resume(int64_t iter_num, bool eval_done) {
  saver_->save_now(iter_num, [&] {
    state_.iter_num = iter_num;
    state_.eval_done = eval_done;
    state_.train_config = to_json(config_);
    state_.elapsed_seconds = elapsed();
    SavedOptimizerState optimizer(world_, *run_.optimizer, run_.model->params());
    if (root()) save_resume_point(config_.out_dir, saved_model(), state_, optimizer.state());
    optimizer.finish();
  });
}

TrainResult TrainingLoop::finish(int64_t iter) {
  result_.final_iter = iter;
  result_.best_val_loss = state_.best_val_loss;
  result_.best_iter = state_.best_iter;
  result_.planned_iters = state_.planned_iters;
  result_.stopped_early = out_of_patience_;
  result_.wall_seconds = read_clock() - start_;
  result_.tokens_per_second =
      train_seconds_ > 0 ? tokens_per_iter_ * static_cast<double>(result_.iterations) / train_seconds_ : 0;
  return result_;
}

}  // namespace

TrainResult run_training(const TrainConfig& config, const RunContext& context) {
  const double started = context.clock.seconds();
  return TrainingLoop(set_up_run(config, context.world, context.stop_signal), context, started).run();
}

TrainResult run_training(const TrainConfig& config, const std::atomic<int>* stop_signal) {
  const World one_process;
  SteadyClock clock;
  return run_training(config, RunContext{one_process, stop_signal, clock});
}

}  // namespace gpt
