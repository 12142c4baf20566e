// gpt sample: streams generated text to stdout (flushed per character); logs go to stderr.
// nanoGPT's output shape: each sample is the prompt followed by the new text, then a line of
// dashes. Samples are generated kMaxBatch at a time as one batch (each with its own random
// stream): the first of each batch streams as it is generated, the others follow it when the
// batch is done.
#include <omp.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/checkpoint_options.h"
#include "cli/commands.h"
#include "cli/dtype_option.h"
#include "core/atomic_file.h"
#include "core/check.h"
#include "core/random_streams.h"
#include "data/dataset.h"
#include "data/utf8.h"
#include "io/checkpoint.h"
#include "kernels/gemm.h"
#include "sample/text_generation.h"

namespace gpt {

namespace {

struct SampleOptions {
  CheckpointOptions model;
  std::string prompt = "\n";
  std::string prompt_file;
  GenerationSettings generation;  // max_new_tokens, context_shift, temperature, top_k, top_p
  int64_t num_samples = 1;
  int64_t seed = 1337;
  bool quiet = false;
  bool raw = false;
  std::string dtype;     // "" = the checkpoint's
  std::string logprobs;  // file for the next-token log-probabilities at every position, or ""
};

// Log-softmax of one row of logits, in double.
std::vector<double> log_softmax(const float* logits, int64_t V) {
  std::vector<double> out;
  gpt::log_softmax(logits, V, out);
  return out;
}

// --logprobs: {"tokens": prompt then generated ids, "prompt_tokens": n, "logprobs": rows[i] = the
// log-probabilities of every id as tokens[i + 1]}, so a row per position but the last. The prompt's
// rows come from one forward pass over it; the generated tokens' from the logits they were drawn
// from. What tools/check_gguf.mjs compares with llama.cpp's.
void write_logprobs(const std::string& path, Gpt& model, const std::vector<int32_t>& prompt,
                    const std::vector<int32_t>& generated, const std::vector<std::vector<double>>& generated_rows) {
  const int64_t V = model.config().vocab_size;
  std::vector<float> prompt_logits;
  Generator generator(model);
  generator.append(prompt.data(), static_cast<int64_t>(prompt.size()), &prompt_logits);
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i + 1 < prompt.size(); ++i) rows.push_back(log_softmax(prompt_logits.data() + i * V, V));
  for (const auto& row : generated_rows) rows.push_back(row);
  std::vector<int32_t> tokens = prompt;
  tokens.insert(tokens.end(), generated.begin(), generated.end());
  const nlohmann::json doc = {
      {"vocab_size", V}, {"prompt_tokens", prompt.size()}, {"tokens", tokens}, {"logprobs", rows}};
  write_file_atomically(path, doc.dump() + "\n");
}

// Writes generated text to stdout as it comes, optionally through a Utf8Repair.
class TextOutput {
 public:
  explicit TextOutput(bool repair) : repair_(repair) {}
  void print(const std::string& text) { write(repair_ ? utf8_.push(text) : text); }
  void finish() {
    if (repair_) write(utf8_.finish());
  }

 private:
  static void write(const std::string& bytes) {
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);  // fputs would stop at a NUL byte
    std::fflush(stdout);
  }
  bool repair_;
  Utf8Repair utf8_;
};

void validate(const SampleOptions& o) {
  if (o.generation.max_new_tokens < 0)
    throw UserError("--max_new_tokens must be >= 0, got " + std::to_string(o.generation.max_new_tokens));
  if (o.num_samples < 1) throw UserError("--num_samples must be >= 1, got " + std::to_string(o.num_samples));
  if (!(o.generation.sampling.temperature >= 0))
    throw UserError("--temperature must be >= 0 (0 = greedy), got " +
                    std::to_string(o.generation.sampling.temperature));
  if (o.generation.sampling.top_k < 0)
    throw UserError("--top_k must be >= 0 (0 = off), got " + std::to_string(o.generation.sampling.top_k));
  if (!(o.generation.sampling.top_p > 0 && o.generation.sampling.top_p <= 1))
    throw UserError("--top_p must be in (0, 1], got " + std::to_string(o.generation.sampling.top_p));
  if (o.seed < 0) throw UserError("--seed must be >= 0");
  if (o.generation.context_shift < 0) throw UserError("--context_shift must be >= 0 (0 = exact)");
  if (!o.logprobs.empty() && o.num_samples != 1) throw UserError("--logprobs needs --num_samples 1");
}

// The prompt's ids, from --prompt or --prompt_file, cropped to its last block_size tokens.
std::vector<int32_t> read_prompt(const SampleOptions& options, const Vocab& vocab, int64_t block_size) {
  std::string prompt_bytes = options.prompt;
  std::string prompt_source = "--prompt";
  if (!options.prompt_file.empty()) {
    try {
      prompt_bytes = read_whole_file(options.prompt_file);
    } catch (const UserError& e) {
      throw UserError(e.what());
    }
    prompt_source = options.prompt_file;
  }
  if (prompt_bytes.empty()) throw UserError(prompt_source + ": the prompt is empty (the default is a newline)");
  std::vector<int32_t> prompt;
  try {
    prompt = vocab.encode(prompt_bytes, prompt_source);
  } catch (const UserError& e) {
    throw UserError(std::string(e.what()) + "; the vocabulary is: " + vocab.listing());
  }
  if (const int64_t dropped = crop_prompt(prompt, block_size); dropped > 0)
    spdlog::warn("the prompt has {} {}; only its last {} (block_size) condition the text", prompt.size() + dropped,
                 vocab.token_noun(), block_size);
  return prompt;
}

int run_sample(SampleOptions& options, const CLI::Option* prompt_flag) {
  setup_logging(options.quiet);
  validate(options);
  if (!options.prompt_file.empty() && prompt_flag->count() > 0)
    throw UserError("give --prompt or --prompt_file, not both");
  LoadedModel loaded = options.model.load();
  Gpt& model = *loaded.model;
  apply_dtype_option(options.dtype, model);
  const int64_t block_size = model.config().block_size;
  if (options.generation.context_shift > block_size)
    throw UserError("--context_shift must be at most block_size (" + std::to_string(block_size) + ")");

  const std::vector<int32_t> prompt = read_prompt(options, loaded.vocab, block_size);
  spdlog::info("{}: {} parameters, block_size {}, vocab {}; {} mode; {}", loaded.path, model.params().parameter_count(),
               block_size, loaded.vocab.size(),
               options.generation.context_shift ? "context_shift " + std::to_string(options.generation.context_shift)
                                                : std::string("exact"),
               describe_matmul(model.matmul_dtype()));

  const GenerationSettings& settings = options.generation;
  // Characters are always valid UTF-8; bytes may not be: a terminal gets U+FFFD for invalid ones.
  const bool repair = loaded.vocab.kind() == VocabKind::bytes && !options.raw && ::isatty(STDOUT_FILENO);
  const std::string shown_prompt = [&] {
    std::string s;
    for (int32_t id : prompt) s += loaded.vocab.decode(id);
    return s;
  }();
  const auto start = std::chrono::steady_clock::now();
  constexpr int64_t kMaxBatch = 32;
  TeamSizer team_sizer;  // one for the run: each batch starts from what the last one measured
  for (int64_t first = 0; first < options.num_samples; first += kMaxBatch) {
    const int64_t batch = std::min(kMaxBatch, options.num_samples - first);
    Generator generator(model, batch);
    generator.set_team_sizer(&team_sizer);
    std::vector<Rng> rngs;
    for (int64_t s = 0; s < batch; ++s) rngs.push_back(sample_stream(static_cast<uint64_t>(options.seed), first + s));
    std::vector<std::string> held(static_cast<std::size_t>(batch), shown_prompt);  // all but the streamed one
    TextOutput streamed(repair);
    streamed.print(shown_prompt);
    std::vector<int32_t> generated;
    std::vector<std::vector<double>> generated_rows;
    generate(generator, prompt, settings, rngs, [&](int64_t s, int32_t id, const float* logits) {
      if (s == 0 && !options.logprobs.empty()) {
        generated.push_back(id);
        generated_rows.push_back(log_softmax(logits, model.config().vocab_size));
      }
      if (s > 0)
        held[s] += loaded.vocab.decode(id);
      else
        streamed.print(loaded.vocab.decode(id));
    });
    streamed.finish();
    if (!options.logprobs.empty()) write_logprobs(options.logprobs, model, prompt, generated, generated_rows);
    std::fputs("\n---------------\n", stdout);
    for (int64_t s = 1; s < batch; ++s) {
      TextOutput whole(repair);
      whole.print(held[s]);
      whole.finish();
      std::fputs("\n---------------\n", stdout);
    }
    std::fflush(stdout);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double tokens = static_cast<double>(options.generation.max_new_tokens * options.num_samples);
  spdlog::info("{} tokens in {:.2f} s: {:.0f} tokens/s", static_cast<int64_t>(tokens), seconds,
               seconds > 0 ? tokens / seconds : 0.0);
  return 0;
}

}  // namespace

Command add_sample_command(CLI::App& app) {
  auto options = std::make_shared<SampleOptions>();
  CLI::App* sub = app.add_subcommand("sample", "Generate text from a trained checkpoint");
  add_checkpoint_options(sub, options->model, "folder holding model.safetensors");
  CLI::Option* prompt = sub->add_option("--prompt", options->prompt, "text to continue (default: a newline)");
  sub->add_option("--prompt_file", options->prompt_file, "read the prompt from a UTF-8 file");
  sub->add_option("--max_new_tokens", options->generation.max_new_tokens, "characters to generate per sample")
      ->capture_default_str();
  sub->add_option("--num_samples", options->num_samples, "samples to draw")->capture_default_str();
  sub->add_option("--temperature", options->generation.sampling.temperature, "softmax temperature; 0 = greedy (argmax)")
      ->capture_default_str();
  sub->add_option("--top_k", options->generation.sampling.top_k, "keep the k most likely characters (0 = off)")
      ->capture_default_str();
  sub->add_option("--top_p", options->generation.sampling.top_p,
                  "keep the smallest set reaching probability p, after top-k")
      ->capture_default_str();
  sub->add_option("--seed", options->seed, "random seed: same checkpoint, flags and seed give the same text")
      ->capture_default_str();
  sub->add_option("--context_shift", options->generation.context_shift,
                  "past block_size: 0 = exact (nanoGPT: re-encode the last block_size characters for every new one); "
                  "N = when the context is full, drop the oldest N characters and re-encode once (faster; each "
                  "character then sees block_size-N+1 .. block_size characters)")
      ->capture_default_str();
  add_dtype_option(sub, options->dtype);
  sub->add_option("--logprobs", options->logprobs,
                  "also write a JSON file of the next-token log-probabilities (every id) after each position of the "
                  "prompt and the generated text (with --num_samples 1)");
  sub->add_flag("--quiet", options->quiet, "print only the generated text");
  sub->add_flag("--raw", options->raw,
                "byte-level models: print the bytes as generated, even to a terminal (by default a terminal gets "
                "U+FFFD for bytes that are not valid UTF-8; files and pipes always get the raw bytes)");
  return {sub, [options, prompt](const World&) { return run_sample(*options, prompt); }};
}

}  // namespace gpt
