// gpt prepare --data PATH [--out DIR]: a text file or folder to a prepared dataset (train.bin,
// val.bin, meta.json) that `gpt train` memory-maps: nanoGPT's prepare.py, streamed and parallel.
#include <omp.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/checkpoint_options.h"
#include "cli/commands.h"
#include "cli/stop_signal.h"
#include "core/check.h"
#include "data/dataset_manifest.h"
#include "data/prepare.h"

namespace gpt {

namespace {

namespace fs = std::filesystem;

struct PrepareOptions {
  std::string data_path;
  std::string val_data_path;
  std::string out_dir;
  std::string vocab = "chars";
  double val_fraction = 0.1;
  bool skip_invalid_files = false;
  int threads = 0;
  bool quiet = false;
};

bool is_within(const fs::path& inner, const fs::path& outer) {
  const fs::path relative = inner.lexically_relative(outer);
  return !relative.empty() && *relative.begin() != "..";
}

// The output folder: new, empty or a previous preparation, and never inside a source folder (it
// would then be read as part of the corpus).
void check_out_dir(const std::string& out_dir, const CorpusSpec& spec) {
  std::error_code ec;
  const fs::path out = fs::weakly_canonical(fs::absolute(out_dir), ec);
  for (const std::string& source : {spec.data_path, spec.val_data_path}) {
    if (source.empty()) continue;
    const fs::path in = fs::weakly_canonical(fs::absolute(source), ec);
    if (fs::is_directory(in, ec) && is_within(out, in))
      throw UserError("--out " + out_dir + " is inside the folder being prepared (" + source + "); choose another");
  }
  if (!fs::exists(out, ec) || is_prepared_dataset(out_dir)) return;
  if (!fs::is_directory(out, ec)) throw UserError("--out " + out_dir + " exists and is not a folder");
  for (const auto& entry : fs::directory_iterator(out, ec)) {
    const std::string name = entry.path().filename().string();
    if (name != kTrainTokensName && name != kValTokensName && name.find(".tmp") == std::string::npos)
      throw UserError("--out " + out_dir + " already holds other files (" + name + "); choose a new or empty folder");
  }
}

int run_prepare(const PrepareOptions& options) {
  setup_logging(options.quiet);
  set_thread_count(options.threads);
  if (!(options.val_fraction >= 0 && options.val_fraction < 1))
    throw UserError("--val_fraction must be in [0, 1), got " + std::to_string(options.val_fraction));
  const CorpusSpec spec{options.data_path, options.val_data_path, parse_vocab_kind(options.vocab, "--vocab"),
                        options.val_fraction, options.skip_invalid_files};
  const CorpusSources sources = list_corpus_sources(spec);
  std::string out_dir = options.out_dir;
  if (out_dir.empty()) {
    std::string name = fs::path(fs::absolute(spec.data_path)).lexically_normal().filename().string();
    if (name.empty()) name = fs::path(fs::absolute(spec.data_path)).lexically_normal().parent_path().filename();
    out_dir = fs::path(name).stem().string() + "_" + options.vocab;
  }
  check_out_dir(out_dir, spec);
  const StopSignalScope stop;
  const DatasetManifest m = prepare_dataset(spec, sources, out_dir, stop.signal());
  std::printf("%s: %lld train + %lld val tokens (%s), vocab of %d %s\n", out_dir.c_str(),
              static_cast<long long>(m.train_tokens), static_cast<long long>(m.val_tokens), to_string(m.token_type),
              m.vocab.size(), m.vocab.token_noun());
  return 0;
}

}  // namespace

Command add_prepare_command(CLI::App& app) {
  auto options = std::make_shared<PrepareOptions>();
  CLI::App* sub = app.add_subcommand(
      "prepare", "Turn a text file or folder into token files (train.bin, val.bin, meta.json) for data_path");
  sub->add_option("--data", options->data_path, "a text file, or a folder (every file under it, in path order)")
      ->required();
  sub->add_option("--out", options->out_dir, "output folder (default: <name of --data>_<vocab> here)");
  sub->add_option("--val_fraction", options->val_fraction, "fraction of the text, at its end, held out for validation")
      ->capture_default_str();
  sub->add_option("--val_data", options->val_data_path,
                  "a text file or folder to validate on instead of the end of --data");
  sub->add_option("--vocab", options->vocab, "chars (Unicode characters of UTF-8 text) or bytes (any file)")
      ->capture_default_str();
  sub->add_flag("--skip_invalid_files", options->skip_invalid_files,
                "with --vocab chars: leave out files that are not UTF-8 (with a warning) instead of failing");
  sub->add_option("--threads", options->threads, "worker threads (0 = all cores; the output is the same)")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--quiet", options->quiet, "log warnings and errors only");
  return {sub, [options](const World&) { return run_prepare(*options); }};
}

}  // namespace gpt
