// gpt heads: runs a trained model on a text (no gradients, dropout off), captures every head's
// attention, scores its pattern (see inspect/head_scores.h), prints a table or JSON, and can
// write a self-contained HTML report with heatmaps.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/checkpoint_options.h"
#include "cli/commands.h"
#include "cli/run_files.h"
#include "core/atomic_file.h"
#include "core/check.h"
#include "data/dataset.h"
#include "inspect/heads_analysis.h"
#include "inspect/heads_report.h"
#include "io/checkpoint.h"

namespace gpt {

namespace {

struct HeadsOptions {
  CheckpointOptions model;
  std::string prompt;
  std::string report;
  bool json = false;
  int64_t induction_length = 0;  // 0: block_size / 2
  int64_t seed = 1337;
};

int run_heads(const HeadsOptions& options) {
  setup_logging(options.json);
  LoadedModel loaded = options.model.load();
  Gpt& model = *loaded.model;
  const GptConfig& c = model.config();
  // The run whose text the model was trained on is the checkpoint's folder (out_dir, or the
  // folder of --checkpoint).
  const std::filesystem::path run_folder = std::filesystem::path(loaded.path).parent_path();
  std::vector<int32_t> ids = options.prompt.empty() ? validation_passage(run_folder.empty() ? "." : run_folder.string(),
                                                                         loaded.vocab, c.block_size)
                                                    : loaded.vocab.encode(options.prompt, "--prompt");
  if (static_cast<int64_t>(ids.size()) > c.block_size) {
    spdlog::warn("the prompt is longer than block_size {}; using its first {} characters", c.block_size, c.block_size);
    ids.resize(static_cast<std::size_t>(c.block_size));
  }
  const int64_t n = static_cast<int64_t>(ids.size());
  if (n < 2) throw UserError("--prompt needs at least 2 characters");
  const int64_t L = options.induction_length > 0 ? options.induction_length : c.block_size / 2;
  if (L < 2 || 2 * L > c.block_size)
    throw UserError("--induction_length must be in [2, block_size / 2] = [2, " + std::to_string(c.block_size / 2) +
                    "]");

  HeadsReportInput report = analyze_heads(model, loaded.vocab, ids, L, static_cast<uint64_t>(options.seed));
  report.model_path = loaded.path;

  if (options.json) {
    nlohmann::ordered_json j = {
        {"model", loaded.path}, {"prompt_length", n}, {"induction_length", L}, {"induction_seed", options.seed}};
    j["heads"] = nlohmann::ordered_json::array();
    for (const HeadScores& s : report.scores)
      j["heads"].push_back({{"layer", s.layer},
                            {"head", s.head},
                            {"label", s.label},
                            {"previous_token", s.previous_token},
                            {"self", s.self},
                            {"first_token", s.first_token},
                            {"entropy", s.entropy},
                            {"distance", s.distance},
                            {"induction", s.induction}});
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%d characters of text; induction test: %lld random characters repeated twice (seed %lld)\n\n",
                static_cast<int>(n), static_cast<long long>(L), static_cast<long long>(options.seed));
    std::printf("layer head  label           previous  self   first  entropy  distance  induction\n");
    for (const HeadScores& s : report.scores)
      std::printf("%5lld %4lld  %-15s %8.3f %6.3f %6.3f %8.3f %9.1f %10.3f\n", static_cast<long long>(s.layer),
                  static_cast<long long>(s.head), s.label.c_str(), s.previous_token, s.self, s.first_token, s.entropy,
                  s.distance, s.induction);
  }
  if (!options.report.empty()) {
    write_file_atomically(options.report, render_heads_report(report));
    spdlog::info("wrote {}", options.report);
  }
  return 0;
}

}  // namespace

Command add_heads_command(CLI::App& app) {
  auto options = std::make_shared<HeadsOptions>();
  CLI::App* sub = app.add_subcommand("heads", "Show what each attention head of a trained model attends to");
  add_checkpoint_options(sub, options->model,
                         "folder holding model.safetensors and config.json (without --prompt, --checkpoint's folder "
                         "needs its config.json too)");
  sub->add_option("--prompt", options->prompt,
                  "text to analyse (default: a passage of the validation split, up to block_size)");
  sub->add_option("--report", options->report, "write a self-contained HTML report with heatmaps to this file");
  sub->add_flag("--json", options->json, "print the scores as JSON");
  sub->add_option("--induction_length", options->induction_length,
                  "length L of the repeated random sequence (default block_size/2)");
  sub->add_option("--seed", options->seed, "seed of the random sequence")->capture_default_str();
  return {sub, [options](const World&) { return run_heads(*options); }};
}

}  // namespace gpt
