// gpt bench --config FILE: times training iterations of a config (forward, backward, clipping,
// AdamW; no evaluation, no checkpoints) and reports the median ms/iter, tokens/s, GFLOP/s by
// nanoGPT's estimate (6N + 12 L H Q T per token), MFU against the measured peak of the config's
// dtype (FMA for float32, VDPBF16PS for bfloat16 where the CPU has it), peak RSS.
#include <omp.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/checkpoint_options.h"
#include "cli/commands.h"
#include "cli/config_flags.h"
#include "cli/config_loader.h"
#include "core/check.h"
#include "kernels/cpu_features.h"
#include "kernels/fma_probe.h"
#include "kernels/gemm.h"
#include "train/lr_schedule.h"
#include "train/run_setup.h"
#include "train/train_step.h"

namespace gpt {

namespace {

struct BenchOptions {
  std::string config_path;
  int64_t iters = 20;
  int64_t warmup = 3;
  double peak_gflops = 0;
  bool json = false;
  ConfigFlags config_flags;
};

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
#if defined(__APPLE__)
  return static_cast<double>(usage.ru_maxrss) / (1024.0 * 1024.0);  // macOS reports bytes
#else
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
#endif
}

int run_bench(BenchOptions& options, const World& world) {
  setup_logging(options.json);
  if (options.iters < 1 || options.warmup < 0) throw UserError("--iters must be >= 1 and --warmup >= 0");
  TrainConfig config = load_train_config(options.config_path, options.config_flags.given());
  set_thread_count(config.threads);
  resolve_dtype(config, world, config.bf16_arithmetic);
  const Dtype dtype = config.matmul_dtype();
  const Dataset data = Dataset::open(config.corpus(), config.cache_dir);
  data.check_fits(config.model.block_size, false);
  Gpt model(config.model_config(data.vocab().size()));
  model.init_weights(static_cast<uint64_t>(config.seed));
  model.set_matmul_dtype(dtype);
  set_bf16_arithmetic(config.bf16_arithmetic);
  const std::unique_ptr<Optimizer> optimizer = make_optimizer(config, model.params());
  LocalGradientSync sync;
  const LrSchedule schedule = lr_schedule(config);
  const StepSettings settings = step_settings(config);
  Arena arena(64u << 20);
  Graph graph(arena);
  Batch batch;
  std::vector<double> ms;
  for (int64_t i = 0; i < options.warmup + options.iters; ++i) {
    const auto start = std::chrono::steady_clock::now();
    train_step(model, graph, *optimizer, sync, data.train(), settings, i, schedule.at(i), batch);
    const double elapsed = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (i >= options.warmup) ms.push_back(elapsed);
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  const double tokens_per_iter =
      static_cast<double>(settings.batch_size * settings.block_size * settings.accumulation_steps);
  const double tokens_per_s = tokens_per_iter / (median * 1e-3);
  const double gflops = model.flops_per_token() * tokens_per_s * 1e-9;
  const double peak = options.peak_gflops > 0 ? options.peak_gflops : measure_peak_gflops(dtype);
  const double mfu = peak > 0 ? gflops / peak : 0;
  const double rss = peak_rss_mib();
  if (options.json) {
    const std::optional<MaxIsa> cap = max_isa_setting().cap;
    nlohmann::ordered_json j = {{"config", options.config_path},
                                {"threads", omp_get_max_threads()},
                                {"dtype", dtype_name(dtype)},
                                {"kernel", gemm_kernel_name(dtype)},
                                {"max_isa", cap ? nlohmann::json(max_isa_name(*cap)) : nlohmann::json()},
                                {"parameters", model.params().parameter_count()},
                                {"iters", options.iters},
                                {"median_ms_per_iter", median},
                                {"min_ms_per_iter", ms.front()},
                                {"tokens_per_s", tokens_per_s},
                                {"gflops", gflops},
                                {"peak_gflops", peak},
                                {"mfu", mfu},
                                {"arena_mib", static_cast<double>(arena.high_water_bytes()) / (1 << 20)},
                                {"peak_rss_mib", rss}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%s: %lld parameters, %d threads, %s\n", options.config_path.c_str(),
                static_cast<long long>(model.params().parameter_count()), omp_get_max_threads(),
                describe_matmul(dtype).c_str());
    std::printf("median %.2f ms/iter (min %.2f) over %lld iterations, %.0f tokens/s\n", median, ms.front(),
                static_cast<long long>(options.iters), tokens_per_s);
    std::printf("%.1f GFLOP/s = %.1f%% MFU of a %.1f GFLOP/s %s peak; arena %.1f MiB, peak RSS %.0f MiB\n", gflops,
                100 * mfu, peak, dtype_name(dtype), static_cast<double>(arena.high_water_bytes()) / (1 << 20), rss);
  }
  return 0;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* sub = app.add_subcommand("bench", "Time training iterations of a config (ms/iter, tokens/s, GFLOP/s, MFU)");
  sub->add_option("--config", options->config_path, "JSON config file")->check(CLI::ExistingFile);
  sub->add_option("--iters", options->iters, "timed iterations")->capture_default_str();
  sub->add_option("--warmup", options->warmup, "untimed iterations first")->capture_default_str();
  sub->add_option("--peak_gflops", options->peak_gflops,
                  "peak GFLOP/s for MFU (default: measured by a probe of the dtype's instruction)");
  sub->add_flag("--json", options->json, "print one JSON object");
  add_config_flags(sub, options->config_flags);
  return {sub, [options](const World& world) { return run_bench(*options, world); }};
}

}  // namespace gpt
