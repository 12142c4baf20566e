#include "train/run_reporter.h"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/utc_time.h"

namespace gpt {

RunReporter::RunReporter(const TrainConfig& config, double tokens_per_iter, double gflop_per_iter, double peak_gflops,
                         bool append)
    : max_iters_(config.max_iters),
      log_interval_(config.log_interval),
      tokens_per_iter_(tokens_per_iter),
      gflop_per_iter_(gflop_per_iter),
      peak_gflops_(peak_gflops),
      metrics_path_((std::filesystem::path(config.out_dir) / "metrics.jsonl").string()),
      metrics_(metrics_path_, append ? std::ios::app : std::ios::trunc) {
  if (!metrics_) throw UserError("cannot write " + metrics_path_, 1);
}

void RunReporter::write_metrics(const std::string& json_line) {
  metrics_ << json_line << '\n';
  metrics_.flush();
}

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

}  // namespace

void RunReporter::start(nlohmann::ordered_json info) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  nlohmann::ordered_json record = {{"type", "start"}, {"time", utc_now()}, {"host", host}, {"cpu", cpu_model()}};
  record.update(info);
  write_metrics(record.dump());
}

void RunReporter::evaluation(int64_t iter, double train_loss, double val_loss, double lr, double seconds,
                             double elapsed_seconds) {
  progress_.clear();
  spdlog::info("step {}: train loss {:.4f}, val loss {:.4f} ({:.1f} s)", iter, train_loss, val_loss, seconds);
  const nlohmann::ordered_json record = {
      {"type", "eval"}, {"iter", iter},      {"train_loss", train_loss},    {"val_loss", val_loss},
      {"lr", lr},       {"eval_s", seconds}, {"elapsed_s", elapsed_seconds}};
  write_metrics(record.dump());
}

void RunReporter::iteration(const IterationReport& r) {
  const double dt = r.seconds;
  ++iterations_seen_;
  ema_ms_ = iterations_seen_ == 1 ? dt * 1e3 : 0.9 * ema_ms_ + 0.1 * dt * 1e3;
  const int64_t done = r.iter + 1;
  const double eta = ema_ms_ * 1e-3 * static_cast<double>(max_iters_ - done);
  const std::string left = budget_seconds_ > 0
                               ? "budget left " + format_duration(std::max(0.0, budget_seconds_ - r.elapsed_seconds))
                               : "ETA " + format_duration(eta);
  if (r.iter % log_interval_ != 0) {
    progress_.show(fmt::format("iter {}/{}  loss {:.4f}  {:.1f} ms/iter  {}", done, max_iters_, r.loss, ema_ms_, left));
    return;
  }
  progress_.clear();
  const double mfu = peak_gflops_ > 0 ? gflop_per_iter_ / dt / peak_gflops_ : 0.0;
  const std::string exchange =
      r.exchange_seconds > 0 ? fmt::format(" (exchange {:.1f} ms)", r.exchange_seconds * 1e3) : std::string();
  spdlog::info("iter {}: loss {:.4f}, lr {:.3e}, {:.1f} ms/iter{}, {:.0f} tokens/s, MFU {:.1f}%, {}", r.iter, r.loss,
               r.lr, dt * 1e3, exchange, tokens_per_iter_ / dt, 100 * mfu, left);
  nlohmann::ordered_json record = {{"type", "train"},
                                   {"iter", r.iter},
                                   {"loss", r.loss},
                                   {"lr", r.lr},
                                   {"grad_norm", r.grad_norm},
                                   {"ms_per_iter", dt * 1e3},
                                   {"tokens_per_s", tokens_per_iter_ / dt},
                                   {"mfu", mfu},
                                   {"elapsed_s", r.elapsed_seconds}};
  if (r.exchange_seconds > 0) record["exchange_ms"] = r.exchange_seconds * 1e3;
  write_metrics(record.dump());
}

}  // namespace gpt
