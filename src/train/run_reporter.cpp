#include "train/run_reporter.h"

#include "io/run_folder.h"
#include "train/metrics_record.h"

#include <spdlog/spdlog.h>

#include <unistd.h>

#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif

#include <cerrno>
#include <cstring>
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
      metrics_path_(run_file(config.out_dir, kMetricsFile)),
      metrics_(metrics_path_, append ? std::ios::app : std::ios::trunc) {
  if (!metrics_) throw UserError("cannot write " + metrics_path_, ExitCode::runtime);
}

// A record that did not reach the disk (full, over the file size limit) ends the run: a curve
// silently cut short would be taken for the run's.
void RunReporter::write_metrics(const std::string& json_line) {
  errno = 0;
  metrics_ << json_line << '\n';
  metrics_.flush();
  if (!metrics_)
    throw UserError("cannot write " + metrics_path_ + ": " + (errno != 0 ? std::strerror(errno) : "write failed"),
                    ExitCode::runtime);
}

namespace {

// Linux's /proc/cpuinfo names x86 CPUs ("model name"), not ARM ones; macOS has a sysctl.
std::string cpu_model() {
#if defined(__APPLE__)
  char brand[256] = {};
  std::size_t size = sizeof brand - 1;
  if (::sysctlbyname("machdep.cpu.brand_string", brand, &size, nullptr, 0) == 0 && brand[0]) return brand;
#endif
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

}  // namespace

void RunReporter::start(nlohmann::ordered_json info) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  StartRecord record{{{"time", utc_now()}, {"host", host}, {"cpu", cpu_model()}}};
  record.fields.update(info);
  write_metrics(to_json(record).dump());
}

void RunReporter::evaluation(int64_t iter, double train_loss, double val_loss, double lr, double seconds,
                             double elapsed_seconds) {
  progress_.clear();
  spdlog::info("step {}: train loss {:.4f}, val loss {:.4f} ({:.1f} s)", iter, train_loss, val_loss, seconds);
  write_metrics(to_json(EvalRecord{iter, train_loss, val_loss, lr, seconds, elapsed_seconds}).dump());
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
  const TrainRecord record{r.iter,
                           r.loss,
                           r.lr,
                           r.grad_norm,
                           dt * 1e3,
                           tokens_per_iter_ / dt,
                           mfu,
                           r.elapsed_seconds,
                           r.exchange_seconds * 1e3};
  write_metrics(to_json(record).dump());
}

}  // namespace gpt
