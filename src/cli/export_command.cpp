// gpt export: writes a trained model's weights alone, for sampling and sharing: no optimizer
// state, and with --dtype bfloat16 the Linear weights in bfloat16 (about half the bytes).
#include <spdlog/spdlog.h>

#include <filesystem>
#include <memory>

#include "cli/checkpoint_options.h"
#include "cli/commands.h"
#include "cli/dtype_option.h"
#include "core/check.h"
#include "io/checkpoint.h"

namespace gpt {

namespace {

struct ExportOptions {
  CheckpointOptions model;
  std::string dtype = "bfloat16";
  std::string out;  // default: <out_dir>/model-<dtype>.safetensors
  bool quiet = false;
};

int run_export(const ExportOptions& options) {
  setup_logging(options.quiet);
  const Dtype dtype = parse_dtype_option(options.dtype);
  LoadedModel loaded = options.model.load();
  const std::filesystem::path folder = std::filesystem::path(loaded.path).parent_path();
  const std::string out = options.out.empty()
                              ? (folder / ("model-" + std::string(dtype_name(dtype)) + ".safetensors")).string()
                              : options.out;
  std::error_code ec;
  if (std::filesystem::equivalent(out, loaded.path, ec))
    throw UserError("--out " + out + " is the checkpoint being exported; choose another file");
  export_model(*loaded.model, loaded.vocab, dtype, loaded.bf16_arithmetic, out);
  const auto bytes = [](const std::string& path) {
    std::error_code size_error;
    return static_cast<double>(std::filesystem::file_size(path, size_error)) / (1 << 20);
  };
  spdlog::info(
      "wrote {} ({:.1f} MiB, {} weights; the checkpoint {:.1f} MiB); sample it with gpt sample --checkpoint {}", out,
      bytes(out), dtype_name(dtype), bytes(loaded.path), out);
  return 0;
}

}  // namespace

Command add_export_command(CLI::App& app) {
  auto options = std::make_shared<ExportOptions>();
  CLI::App* sub = app.add_subcommand("export", "Write a trained model's weights alone (optionally in bfloat16)");
  add_checkpoint_options(sub, options->model, "folder holding model.safetensors", false);
  sub->add_option("--dtype", options->dtype,
                  "\"bfloat16\" (the Linear weights rounded to bfloat16, half the bytes; samples as --dtype bfloat16 "
                  "does) or \"float32\" (the weights as trained)")
      ->capture_default_str();
  sub->add_option("--out", options->out, "file to write (default: model-<dtype>.safetensors beside the checkpoint)");
  sub->add_flag("--quiet", options->quiet, "no log output");
  return {sub, [options](const World&) { return run_export(*options); }};
}

}  // namespace gpt
