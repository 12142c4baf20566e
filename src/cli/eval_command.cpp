// gpt eval --out_dir DIR --data FILE [--json]: mean cross-entropy of a checkpoint on a text, over
// every full non-overlapping block_size window, deterministic (no dropout, no sampling).
#include <omp.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/check.h"
#include "data/dataset.h"
#include "io/checkpoint.h"
#include "train/evaluate.h"

namespace gpt {

namespace {

struct EvalOptions {
  std::string out_dir = "out";
  std::string checkpoint;
  std::string data_path;
  bool json = false;
  int threads = 0;
};

int run_eval(const EvalOptions& options) {
  setup_logging(options.json);
  if (options.threads > 0) omp_set_num_threads(options.threads);
  LoadedModel loaded = load_model(options.checkpoint.empty() ? options.out_dir : options.checkpoint);
  const std::vector<int32_t> ids = loaded.vocab.encode(read_text_file(options.data_path), options.data_path);
  const int64_t T = loaded.model->config().block_size;
  if (static_cast<int64_t>(ids.size()) <= T)
    throw UserError(options.data_path + ": has " + std::to_string(ids.size()) + " characters; evaluation needs more than block_size = " +
                    std::to_string(T));
  Arena arena(16u << 20);
  Graph graph(arena);
  const WindowEval result = evaluate_windows(*loaded.model, graph, ids, T);
  if (options.json) {
    std::printf("%s\n", nlohmann::json{{"loss", result.loss_nats}, {"bpc", result.bits_per_char}, {"tokens", result.tokens}}.dump().c_str());
  } else {
    std::printf("loss %.4f nats/char, %.4f bits/char over %lld characters (%lld windows of %lld) of %s\n", result.loss_nats,
                result.bits_per_char, static_cast<long long>(result.tokens), static_cast<long long>(result.windows),
                static_cast<long long>(T), options.data_path.c_str());
  }
  return 0;
}

}  // namespace

Command add_eval_command(CLI::App& app) {
  auto options = std::make_shared<EvalOptions>();
  CLI::App* sub = app.add_subcommand("eval", "Evaluate a checkpoint's loss on a text file");
  sub->add_option("--out_dir", options->out_dir, "folder holding model.safetensors")->capture_default_str();
  sub->add_option("--checkpoint", options->checkpoint, "a model.safetensors file (instead of --out_dir)");
  sub->add_option("--data", options->data_path, "UTF-8 text file to evaluate on")->required();
  sub->add_flag("--json", options->json, "print {\"loss\", \"bpc\", \"tokens\"} as JSON");
  sub->add_option("--threads", options->threads, "worker threads (0 = all cores)")->check(CLI::NonNegativeNumber);
  return {sub, [options] { return run_eval(*options); }};
}

}  // namespace gpt
