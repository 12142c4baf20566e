#include "train/trainer.h"

#include <omp.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "data/dataset.h"
#include "io/atomic_file.h"
#include "io/checkpoint.h"
#include "kernels/fma_probe.h"
#include "model/gpt.h"
#include "train/adamw.h"
#include "train/evaluate.h"
#include "train/lr_schedule.h"
#include "train/progress.h"
#include "train/train_step.h"

namespace gpt {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Appends one JSON object per line to out_dir/metrics.jsonl, flushed so a plot can follow along.
class MetricsLog {
 public:
  MetricsLog(const std::string& out_dir, bool append)
      : path_((std::filesystem::path(out_dir) / "metrics.jsonl").string()),
        out_(path_, append ? std::ios::app : std::ios::trunc) {
    if (!out_) throw UserError("cannot write " + path_, 1);
  }
  void write(const nlohmann::ordered_json& record) {
    out_ << record.dump() << '\n';
    out_.flush();
  }

 private:
  std::string path_;
  std::ofstream out_;
};

void check_resume_matches(const GptConfig& saved, const TrainConfig& config, const std::string& path) {
  const std::pair<const char*, std::pair<int64_t, int64_t>> sizes[] = {
      {"n_layer", {saved.n_layer, config.n_layer}},
      {"n_head", {saved.n_head, config.n_head}},
      {"n_embd", {saved.n_embd, config.n_embd}},
      {"block_size", {saved.block_size, config.block_size}}};
  for (const auto& [key, values] : sizes)
    if (values.first != values.second)
      throw UserError("cannot resume: " + path + " has " + key + " " + std::to_string(values.first) + " but the config says " +
                      std::to_string(values.second));
  if (saved.bias != config.bias) throw UserError("cannot resume: " + path + " and the config disagree on \"bias\"");
}

}  // namespace

TrainResult run_training(const TrainConfig& config, const std::atomic<int>* stop_signal) {
  const auto run_start = Clock::now();
  if (config.threads > 0) omp_set_num_threads(static_cast<int>(config.threads));
  const Dataset data(config.data_path, config.val_fraction, config.block_size);
  const bool resume = config.init_from == "resume";

  std::error_code ec;
  std::filesystem::create_directories(config.out_dir, ec);
  if (ec) throw UserError("cannot create out_dir " + config.out_dir + ": " + ec.message(), 1);

  std::unique_ptr<Gpt> model;
  TrainingState state;
  Rng rng(static_cast<uint64_t>(config.seed));
  if (resume) {
    LoadedModel loaded = load_model(config.out_dir);
    check_resume_matches(loaded.model->config(), config, loaded.path);
    if (loaded.vocab.code_points() != data.vocab().code_points())
      throw UserError("cannot resume: the vocabulary of " + config.data_path + " differs from the one in " + loaded.path);
    model = std::move(loaded.model);
  } else {
    model = std::make_unique<Gpt>(config.model_config(data.vocab().size()));
    model->init_weights(rng);
  }
  model->set_dropout(static_cast<float>(config.dropout));  // a training setting: a resumed run uses the config's
  AdamW optimizer(model->params(), {config.beta1, config.beta2, 1e-8, config.weight_decay});
  if (resume) {
    state = load_training_state(config.out_dir, *model, optimizer.exp_avg(), optimizer.exp_avg_sq());
    optimizer.set_step_count(state.adam_step);
    rng.set_state(state.rng);
    spdlog::info("resuming from {} at iteration {} (best val loss {:.4f})", model_path(config.out_dir), state.iter_num,
                 state.best_val_loss);
  }
  write_file_atomically((std::filesystem::path(config.out_dir) / "config.json").string(), to_json(config).dump(2) + "\n");

  const int64_t B = config.batch_size, T = config.block_size, accum = config.gradient_accumulation_steps;
  const StepSettings step_settings{B, T, accum, config.grad_clip};
  const double tokens_per_iter = static_cast<double>(B * T * accum);
  // MFU: nanoGPT's flop estimate per iteration against this machine's measured FMA peak.
  static const double peak_gflops = measure_fma_peak_gflops(0.2);
  const double gflop_per_iter = model->flops_per_token() * tokens_per_iter * 1e-9;
  spdlog::info("model: {} parameters, {} layers, {} heads, n_embd {}, block_size {}, vocab {}", model->params().parameter_count(),
               config.n_layer, config.n_head, config.n_embd, config.block_size, data.vocab().size());
  spdlog::info("data: {} train / {} val characters from {}; {} tokens per iteration; {} threads", data.train().size(),
               data.val().size(), config.data_path, static_cast<int64_t>(tokens_per_iter), omp_get_max_threads());

  const LrSchedule schedule{config.learning_rate, config.min_lr, config.warmup_iters, config.lr_decay_iters, config.decay_lr};
  Arena arena(64u << 20);
  Graph graph(arena);
  Batch batch;
  MetricsLog metrics(config.out_dir, resume);
  ProgressLine progress;
  TrainResult result;
  result.last_val_loss = std::numeric_limits<double>::quiet_NaN();

  const int64_t start_iter = state.iter_num;
  int64_t last_saved_iter = -1;
  auto save = [&](int64_t iter_num, bool eval_done) {
    last_saved_iter = iter_num;
    state.iter_num = iter_num;
    state.eval_done = eval_done;
    state.adam_step = optimizer.step_count();
    state.rng = rng.state();
    state.train_config = to_json(config);
    const OptimizerMoments moments{optimizer.exp_avg(), optimizer.exp_avg_sq()};
    save_checkpoint(config.out_dir, *model, data.vocab(), &state, &moments);
  };

  double train_seconds = 0.0, ema_ms = 0.0;
  int64_t iter = start_iter;
  for (;;) {
    const bool eval_now = iter % config.eval_interval == 0 || iter == config.max_iters;
    if (eval_now && !(resume && iter == start_iter && state.eval_done)) {
      progress.clear();
      const auto eval_start = Clock::now();
      const double train_loss = estimate_loss(*model, graph, data.train(), config.eval_iters, B, T, rng, batch);
      const double val_loss = estimate_loss(*model, graph, data.val(), config.eval_iters, B, T, rng, batch);
      result.last_val_loss = val_loss;
      spdlog::info("step {}: train loss {:.4f}, val loss {:.4f} ({:.1f} s)", iter, train_loss, val_loss, seconds_since(eval_start));
      metrics.write({{"type", "eval"}, {"iter", iter}, {"train_loss", train_loss}, {"val_loss", val_loss}, {"lr", schedule.at(iter)}});
      if (val_loss < state.best_val_loss || config.always_save_checkpoint) {
        state.best_val_loss = std::min(state.best_val_loss, val_loss);
        if (iter > 0) {
          save(iter, true);
          spdlog::info("saved checkpoint to {}", model_path(config.out_dir));
        }
      }
    }
    if (iter >= config.max_iters) break;

    const auto iter_start = Clock::now();
    const double lr = schedule.at(iter);
    const StepResult step = train_step(*model, graph, optimizer, data.train(), step_settings, lr, rng, batch);
    const double loss = step.loss, grad_norm = step.grad_norm;
    if (!step.finite())
      throw UserError("training diverged at iteration " + std::to_string(iter) + ": loss " + std::to_string(loss) +
                      ", gradient norm " + std::to_string(grad_norm) + " (learning rate " + std::to_string(lr) +
                      "); the last good checkpoint in " + config.out_dir + " was kept. Try a lower learning_rate.", 1);
    const double dt = seconds_since(iter_start);
    train_seconds += dt;
    ++result.iterations;
    ema_ms = result.iterations == 1 ? dt * 1e3 : 0.9 * ema_ms + 0.1 * dt * 1e3;

    const int64_t done = iter + 1;
    const double eta = ema_ms * 1e-3 * static_cast<double>(config.max_iters - done);
    if (iter % config.log_interval == 0) {
      progress.clear();
      const double mfu = peak_gflops > 0 ? gflop_per_iter / dt / peak_gflops : 0.0;
      spdlog::info("iter {}: loss {:.4f}, lr {:.3e}, {:.1f} ms/iter, {:.0f} tokens/s, MFU {:.1f}%, ETA {}", iter, loss, lr,
                   dt * 1e3, tokens_per_iter / dt, 100 * mfu, format_duration(eta));
      metrics.write({{"type", "train"}, {"iter", iter}, {"loss", loss}, {"lr", lr}, {"grad_norm", grad_norm},
                     {"ms_per_iter", dt * 1e3}, {"tokens_per_s", tokens_per_iter / dt}, {"mfu", mfu}});
    } else {
      progress.show(fmt::format("iter {}/{}  loss {:.4f}  {:.1f} ms/iter  ETA {}", done, config.max_iters, loss, ema_ms,
                                format_duration(eta)));
    }
    iter = done;
    if (stop_signal && stop_signal->load() != 0) {
      progress.clear();
      result.stop_signal = stop_signal->load();
      save(iter, false);
      spdlog::warn("interrupted after iteration {}: checkpoint saved to {}; continue with init_from \"resume\"", iter - 1,
                   model_path(config.out_dir));
      break;
    }
  }
  progress.clear();
  if (result.stop_signal == 0 && last_saved_iter != iter) {
    save(iter, true);
    spdlog::info("saved final checkpoint to {}", model_path(config.out_dir));
  }
  result.final_iter = iter;
  result.best_val_loss = state.best_val_loss;
  result.wall_seconds = seconds_since(run_start);
  result.tokens_per_second = train_seconds > 0 ? tokens_per_iter * static_cast<double>(result.iterations) / train_seconds : 0;
  return result;
}

}  // namespace gpt
