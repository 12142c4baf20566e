// gpt eval --out_dir DIR --data PATH [--json]: mean cross-entropy of a checkpoint on a text (a file,
// a folder, or a prepared dataset's split), over every full non-overlapping block_size window,
// deterministic (no dropout, no sampling).
#include <omp.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <numbers>

#include "cli/checkpoint_options.h"
#include "cli/commands.h"
#include "cli/dtype_option.h"
#include "core/atomic_file.h"
#include "core/check.h"
#include "data/dataset.h"
#include "inspect/surprisal_report.h"
#include "io/checkpoint.h"
#include "sample/text_generation.h"
#include "train/evaluate.h"

namespace gpt {

namespace {

struct EvalOptions {
  CheckpointOptions model;
  std::string data_path;
  std::string split = "val";
  bool json = false;
  bool sampler_context = false;
  int64_t context_shift = 0;
  int64_t max_chars = 20000;
  std::string report;
  bool max_chars_given = false;
  std::string dtype;  // "" = the checkpoint's
};

// --report: the surprisal view of the text's first max_chars characters (3000 unless given).
void write_surprisal_report(const EvalOptions& options, LoadedModel& loaded, const ModelTokens& text) {
  const int64_t T = loaded.model->config().block_size;
  const int64_t max_tokens = options.max_chars_given ? options.max_chars : 3000;
  Arena arena(16u << 20);
  Graph graph(arena);
  SurprisalPage page{loaded.path, text.description, T, text.view[0],
                     surprisal_windows(*loaded.model, graph, text.view, T, max_tokens)};
  write_file_atomically(options.report, render_surprisal_report(page, loaded.vocab));
  spdlog::info("wrote {}: {} {} shaded", options.report, page.tokens.size(), loaded.vocab.token_noun());
}

// The likelihood of the text as `gpt sample` would condition each character (exact or shifting
// window): what a context mode costs in quality.
int run_sampler_context_eval(const EvalOptions& options, LoadedModel& loaded, const ModelTokens& text) {
  const int64_t T = loaded.model->config().block_size;
  if (options.context_shift < 0 || options.context_shift > T)
    throw UserError("--context_shift must be in [0, block_size = " + std::to_string(T) + "]");
  if (options.max_chars < 2) throw UserError("--max_chars must be at least 2");
  const std::vector<int32_t> ids = text.view.to_vector(0, std::min(text.view.size(), options.max_chars));
  Generator generator(*loaded.model);
  const double nll = sampler_context_nll(generator, ids, options.context_shift);
  const auto tokens = static_cast<int64_t>(ids.size()) - 1;
  const std::string mode = options.context_shift ? "context_shift " + std::to_string(options.context_shift) : "exact";
  if (options.json)
    std::printf("%s\n",
                nlohmann::json{{"loss", nll}, {"bpc", nll / std::numbers::ln2}, {"tokens", tokens}, {"mode", mode}}
                    .dump()
                    .c_str());
  else
    std::printf("loss %.4f nats/%s, %.4f bits/%s over %lld %s of %s, conditioned as gpt sample (%s)\n", nll,
                loaded.vocab.token_unit(), nll / std::numbers::ln2, loaded.vocab.token_unit(),
                static_cast<long long>(tokens), loaded.vocab.token_noun(), text.description.c_str(), mode.c_str());
  return 0;
}

int run_eval(const EvalOptions& options) {
  setup_logging(options.json);
  LoadedModel loaded = options.model.load();
  apply_dtype_option(options.dtype, *loaded.model);
  const ModelTokens text = tokens_in_vocab(options.data_path, loaded.vocab, options.split);
  if (options.sampler_context) return run_sampler_context_eval(options, loaded, text);
  if (!options.report.empty()) write_surprisal_report(options, loaded, text);
  const int64_t T = loaded.model->config().block_size;
  if (text.view.size() <= T)
    throw UserError(text.description + ": has " + std::to_string(text.view.size()) + " " + loaded.vocab.token_noun() +
                    "; evaluation needs more than block_size = " + std::to_string(T));
  Arena arena(16u << 20);
  Graph graph(arena);
  const WindowEval result = evaluate_windows(*loaded.model, graph, text.view, T);
  if (options.json) {
    std::printf("%s\n",
                nlohmann::json{{"loss", result.loss_nats}, {"bpc", result.bits_per_char}, {"tokens", result.tokens}}
                    .dump()
                    .c_str());
  } else {
    std::printf("loss %.4f nats/%s, %.4f bits/%s over %lld %s (%lld windows of %lld) of %s\n", result.loss_nats,
                loaded.vocab.token_unit(), result.bits_per_char, loaded.vocab.token_unit(),
                static_cast<long long>(result.tokens), loaded.vocab.token_noun(),
                static_cast<long long>(result.windows), static_cast<long long>(T), text.description.c_str());
  }
  return 0;
}

}  // namespace

Command add_eval_command(CLI::App& app) {
  auto options = std::make_shared<EvalOptions>();
  CLI::App* sub =
      app.add_subcommand("eval", "Evaluate a checkpoint's loss on a text file, a folder or a prepared dataset");
  add_checkpoint_options(sub, options->model, "folder holding model.safetensors");
  sub->add_option("--data", options->data_path,
                  "what to evaluate on: a text file, a folder of text files, or a prepared dataset (see --split)")
      ->required();
  sub->add_option("--split", options->split, "of a prepared dataset: val, train or all")->capture_default_str();
  sub->add_flag("--json", options->json, "print {\"loss\", \"bpc\", \"tokens\"} as JSON");
  add_dtype_option(sub, options->dtype);
  sub->add_flag("--sampler_context", options->sampler_context,
                "score every character as gpt sample conditions it (one-character prompt, then exact or shifting "
                "window) instead of non-overlapping windows");
  sub->add_option("--context_shift", options->context_shift, "with --sampler_context: 0 = exact, N = shifting window")
      ->capture_default_str();
  CLI::Option* max_chars =
      sub->add_option("--max_chars", options->max_chars,
                      "with --sampler_context: score at most this many characters; with --report: show at most this "
                      "many (default 3000)")
          ->capture_default_str();
  sub->add_option("--report", options->report,
                  "also write an HTML page of the text shaded by each character's loss, with the model's top-5 "
                  "predictions on hover");
  return {sub, [options, max_chars](const World&) {
            options->max_chars_given = max_chars->count() > 0;
            return run_eval(*options);
          }};
}

}  // namespace gpt
