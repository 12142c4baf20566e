// gpt report --out_dir DIR [--out_dir DIR2 ...] [--out FILE.html]: the run report (see
// inspect/run_report.h), with a sample from the final model and its heads table for one run.
#include <spdlog/spdlog.h>

#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "cli/run_files.h"
#include "core/atomic_file.h"
#include "core/check.h"
#include "core/random_streams.h"
#include "data/utf8.h"
#include "inspect/heads_analysis.h"
#include "inspect/heads_report.h"
#include "inspect/html.h"
#include "inspect/run_report.h"
#include "io/checkpoint.h"
#include "io/run_folder.h"
#include "sample/text_generation.h"

namespace gpt {

namespace {

namespace fs = std::filesystem;

// sample_chars after a newline, drawn with gpt sample's defaults from `seed`.
std::string final_sample(LoadedModel& loaded, int64_t chars, uint64_t seed) {
  Generator generator(*loaded.model, 1);
  std::vector<Rng> rngs{sample_stream(seed, 0)};
  GenerationSettings settings;
  settings.max_new_tokens = chars;
  std::string text;
  const std::vector<int32_t> prompt =
      loaded.vocab.encode(std::string("\n"), "the sample's prompt");  // both kinds have a newline token
  generate(generator, prompt, settings, rngs,
           [&](int64_t, int32_t id, const float*) { text += loaded.vocab.decode(id); });
  Utf8Repair repair;  // byte-level models may write invalid UTF-8
  return repair.push(text) + repair.finish();
}

// The heads table, and the heatmaps beside the report.
std::string heads_section(LoadedModel& loaded, const std::string& out_dir, const std::string& heatmaps_path,
                          uint64_t seed) {
  const int64_t T = loaded.model->config().block_size;
  const std::vector<int32_t> ids = validation_passage(out_dir, loaded.vocab, T);
  HeadsReportInput heads = analyze_heads(*loaded.model, loaded.vocab, ids, T / 2, seed);
  heads.model_path = loaded.path;
  write_file_atomically(heatmaps_path, render_heads_report(heads));
  std::string html =
      "<table><thead><tr><th>layer</th><th>head</th><th>label</th><th>previous token</th><th>self</th>"
      "<th>first token</th><th>entropy</th><th>distance</th><th>induction</th></tr></thead><tbody>";
  char row[512];
  for (const HeadScores& s : heads.scores) {
    std::snprintf(row, sizeof row,
                  "<tr><td>%lld</td><td>%lld</td><td>%s</td><td>%.3f</td><td>%.3f</td><td>%.3f</td><td>%.3f</td>"
                  "<td>%.1f</td><td>%.3f</td></tr>",
                  static_cast<long long>(s.layer), static_cast<long long>(s.head), escape_html(s.label).c_str(),
                  s.previous_token, s.self, s.first_token, s.entropy, s.distance, s.induction);
    html += row;
  }
  return html + "</tbody></table><p><small>Scores as <code>gpt heads</code> prints them, on " +
         std::to_string(ids.size()) + " characters of the validation split and an induction test.</small></p>";
}

struct ReportRequest {
  std::vector<std::string> out_dirs;
  std::string out;
  int64_t sample_chars = 300;
  uint64_t seed = 1337;
  bool with_sample = true;
  int refresh_seconds = 0;
};

void write_report(const ReportRequest& request) {
  std::vector<RunRecord> runs;
  for (const std::string& dir : request.out_dirs) runs.push_back(read_run(dir));
  ReportExtras extras;
  extras.refresh_seconds = request.refresh_seconds;
  const std::string checkpoint = model_path(request.out_dirs[0]);
  std::error_code ec;
  if (runs.size() == 1 && request.with_sample && fs::exists(checkpoint, ec)) {
    LoadedModel loaded = load_model(request.out_dirs[0]);
    extras.sample = final_sample(loaded, request.sample_chars, request.seed);
    extras.sample_note = std::to_string(request.sample_chars) + " tokens from " + checkpoint +
                         " after a newline (gpt sample --seed " + std::to_string(request.seed) + " --max_new_tokens " +
                         std::to_string(request.sample_chars) + ")";
    const fs::path out(request.out);
    const fs::path heatmaps = out.parent_path() / (out.stem().string() + "_heads.html");
    try {
      extras.heads_html = heads_section(loaded, request.out_dirs[0], heatmaps.string(), request.seed);
      extras.heads_link = heatmaps.filename().string();
    } catch (const UserError& e) {
      spdlog::warn("no heads section: {}", e.what());
    }
  }
  write_file_atomically(request.out, render_run_report(runs, extras));
}

struct ReportOptions {
  ReportRequest request;
  bool no_sample = false;
  bool quiet = false;
};

int run_report(ReportOptions& options) {
  setup_logging(options.quiet);
  ReportRequest& request = options.request;
  if (request.out.empty())
    request.out = request.out_dirs.size() == 1 ? run_file(request.out_dirs[0], kReportFile) : std::string(kReportFile);
  request.with_sample = !options.no_sample;
  write_report(request);
  spdlog::info("wrote {}", request.out);
  return 0;
}

}  // namespace

void write_run_report(const std::string& out_dir, RunStage stage) {
  ReportRequest request;
  request.out_dirs = {out_dir};
  request.out = run_file(out_dir, kReportFile);
  request.with_sample = stage == RunStage::finished;
  request.refresh_seconds = stage == RunStage::in_progress ? 30 : 0;
  write_report(request);
}

Command add_report_command(CLI::App& app) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* sub =
      app.add_subcommand("report", "Write an HTML report of one or more training runs (curves, config, sample, heads)");
  sub->add_option("--out_dir", options->request.out_dirs, "a run's out_dir; repeat to compare runs")->required();
  sub->add_option("--out", options->request.out,
                  "the HTML file (default: OUT_DIR/report.html for one run, report.html for several)");
  sub->add_option("--sample_chars", options->request.sample_chars, "length of the sample from the final model")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--seed", options->request.seed, "seed of the sample and of the heads' induction test")
      ->capture_default_str();
  sub->add_flag("--no_sample", options->no_sample, "leave out the sample and the heads");
  sub->add_flag("--quiet", options->quiet, "log warnings and errors only");
  return {sub, [options](const World&) { return run_report(*options); }};
}

}  // namespace gpt
