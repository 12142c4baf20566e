// What a training run tells its user: log lines (spdlog), a live progress line on a terminal, and
// out_dir/metrics.jsonl (one JSON object per logged iteration and per evaluation, flushed so a
// plot can follow along). The training loop calls it; it decides nothing about the run.
#pragma once

#include <cstdint>
#include <fstream>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "train/progress.h"
#include "train/train_config.h"

namespace gpt {

struct IterationReport {
  int64_t iter;
  double loss, grad_norm, lr, seconds;
  double exchange_seconds = 0;  // of the gradient exchange between processes (0 in one process)
  double elapsed_seconds = 0;   // since the run began (over all its resumed parts)
};

class RunReporter {
 public:
  // tokens_per_iter and gflop_per_iter for throughput and MFU against peak_gflops (0 = unknown).
  // `append` continues a resumed run's metrics.jsonl.
  RunReporter(const TrainConfig& config, double tokens_per_iter, double gflop_per_iter, double peak_gflops,
              bool append);

  // A {"type": "start"} record: when and where the run (or its resumed part) began, and what it trains.
  void start(nlohmann::ordered_json info);
  void evaluation(int64_t iter, double train_loss, double val_loss, double lr, double seconds, double elapsed_seconds);
  // A log line every log_interval iterations, the progress line otherwise.
  void iteration(const IterationReport& report);
  void clear_progress() { progress_.clear(); }
  // max_time: the run's length once fixed, and the budget whose remainder replaces the ETA.
  void set_max_iters(int64_t max_iters) { max_iters_ = max_iters; }
  void set_budget(double seconds) { budget_seconds_ = seconds; }

 private:
  void write_metrics(const std::string& json_line);

  int64_t max_iters_, log_interval_;
  double tokens_per_iter_, gflop_per_iter_, peak_gflops_;
  std::string metrics_path_;
  std::ofstream metrics_;
  ProgressLine progress_;
  int64_t iterations_seen_ = 0;
  double budget_seconds_ = 0;
  double ema_ms_ = 0.0;
};

}  // namespace gpt
