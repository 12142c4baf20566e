// The training loop, with nanoGPT's train.py semantics: evaluate every eval_interval iterations
// (and at max_iters), save when val loss improves (or always), gradient accumulation, global-norm
// clipping, warmup + decay schedule (train/lr_schedule.h); a time budget (max_time) and early stopping (patience).
// Logs through spdlog, writes out_dir/config.json, out_dir/metrics.jsonl and the checkpoint (see
// io/checkpoint.h). An iteration is one optimizer update, counted from 0. The log keeps nanoGPT's
// two line kinds: "iter N: loss ..." after iteration N trained, and "step N: train loss ..., val
// loss ..." for the evaluation at N, which comes before iteration N trains.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "core/clock.h"
#include "distributed/world.h"
#include "train/train_config.h"

namespace gpt {

struct TrainResult {
  int64_t iterations = 0;  // iterations run by this process
  int64_t final_iter = 0;  // the iteration the run stopped at
  double best_val_loss = 0;
  int64_t best_iter = -1;    // the iteration of best_val_loss, whose weights model.safetensors holds (-1: unknown)
  double last_val_loss = 0;  // from the last evaluation (NaN when none ran)
  int64_t last_eval_iter = -1;
  double wall_seconds = 0;
  double tokens_per_second = 0;
  int stop_signal = 0;         // the signal that stopped the run early, 0 when it completed
  int64_t planned_iters = 0;   // max_time: the length the run fixed (0: none)
  bool stopped_early = false;  // patience ran out
};

// What a run is given besides its config.
struct RunContext {
  const World& world;
  // Set asynchronously (e.g. by a SIGINT handler) to ask the loop to finish the current
  // iteration, save a checkpoint and return. May be null.
  const std::atomic<int>* stop_signal = nullptr;
  // Every duration the run measures (the time budget, throughput, the log) is read from it.
  Clock& clock;
  // Rank 0, after every evaluation and its checkpoint, e.g. to refresh a report; may be empty.
  // Its UserErrors are logged as warnings, not fatal.
  std::function<void()> after_evaluation = {};
};

TrainResult run_training(const TrainConfig& config, const RunContext& context);
// One process on the machine's clock.
TrainResult run_training(const TrainConfig& config, const std::atomic<int>* stop_signal);

}  // namespace gpt
