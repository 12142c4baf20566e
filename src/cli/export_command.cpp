// gpt export: writes a trained model's weights alone, for sampling and sharing: no optimizer
// state, and with --dtype bfloat16 the Linear weights in bfloat16 (about half the bytes). With
// --format gguf, a GGUF file that llama.cpp runs (io/gguf_export.h), or a refusal naming the keys
// that block it.
#include <spdlog/spdlog.h>

#include <filesystem>
#include <memory>

#include "cli/checkpoint_options.h"
#include "cli/commands.h"
#include "cli/dtype_option.h"
#include "core/ascii.h"
#include "core/check.h"
#include "io/checkpoint.h"
#include "io/gguf_export.h"

namespace gpt {

namespace {

struct ExportOptions {
  CheckpointOptions model;
  std::string dtype = "bfloat16";
  std::string out;  // default: <out_dir>/model-<dtype>.safetensors or model-<tensor_type>.gguf
  std::string format = "safetensors";
  std::string tensor_type = "F32";
  bool quiet = false;
  bool dtype_given = false, tensor_type_given = false;
};

double mebibytes(const std::string& path) {
  std::error_code size_error;
  return static_cast<double>(std::filesystem::file_size(path, size_error)) / (1 << 20);
}

int run_gguf_export(const ExportOptions& options) {
  if (options.dtype_given) throw UserError("--dtype is for --format safetensors; GGUF takes --tensor_type");
  const GgufTensorType type = parse_gguf_tensor_type(options.tensor_type);
  LoadedModel loaded = options.model.load();
  const std::filesystem::path folder = std::filesystem::path(loaded.path).parent_path();
  const std::string lower = ascii_lower(gguf_tensor_type_name(type));
  const std::string out = options.out.empty() ? (folder / ("model-" + lower + ".gguf")).string() : options.out;
  const std::string name = std::filesystem::absolute(folder).filename().string();
  export_gguf(*loaded.model, loaded.vocab, type, name.empty() ? "gpt" : name, out);
  spdlog::info(
      "wrote {} ({:.1f} MiB, llama.cpp architecture {}, {} weights); run it in llama.cpp, e.g. llama-server -m {} -c "
      "{} (docs/checkpoints.md)",
      out, mebibytes(out), gguf_architecture(loaded.model->config()), gguf_tensor_type_name(type), out,
      loaded.model->config().block_size);
  return 0;
}

int run_export(const ExportOptions& options) {
  setup_logging(options.quiet);
  if (options.format == "gguf") return run_gguf_export(options);
  if (options.format != "safetensors")
    throw UserError("--format must be \"safetensors\" or \"gguf\", got \"" + options.format + "\"");
  if (options.tensor_type_given) throw UserError("--tensor_type is for --format gguf");
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
  const auto bytes = mebibytes;
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
  CLI::Option* dtype =
      sub->add_option(
             "--dtype", options->dtype,
             "\"bfloat16\" (the Linear weights rounded to bfloat16, half the bytes; samples as --dtype bfloat16 "
             "does) or \"float32\" (the weights as trained)")
          ->capture_default_str();
  sub->add_option(
      "--out", options->out,
      "file to write (default: model-<dtype>.safetensors or model-<tensor_type>.gguf beside the checkpoint)");
  sub->add_option("--format", options->format,
                  "\"safetensors\" (gpt's own, and PyTorch's) or \"gguf\" (llama.cpp's: llama-cli, llama-server, "
                  "ollama, node-llama-cpp; docs/checkpoints.md says which models export)")
      ->capture_default_str();
  CLI::Option* tensor_type =
      sub->add_option(
             "--tensor_type", options->tensor_type,
             "with --format gguf: the weight matrices' type, F32 (exact), F16, BF16 or Q8_0 (8-bit blocks of 32); "
             "norms and biases stay F32")
          ->capture_default_str();
  sub->add_flag("--quiet", options->quiet, "no log output");
  return {sub, [options, dtype, tensor_type](const World&) {
            options->dtype_given = dtype->count() > 0;
            options->tensor_type_given = tensor_type->count() > 0;
            return run_export(*options);
          }};
}

}  // namespace gpt
