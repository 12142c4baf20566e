#include "train/train_config.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

namespace gpt {

std::optional<double> parse_duration(const std::string& text) {
  if (text.empty()) return 0.0;
  double total = 0;
  std::size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    std::size_t used = 0;
    double value;
    try {
      value = std::stod(text.substr(i), &used);
    } catch (const std::exception&) {
      return std::nullopt;
    }
    if (!std::isfinite(value) || value < 0 || text[i] == '+' || text[i] == '-') return std::nullopt;
    i += used;
    double unit = 1;  // a bare number is seconds
    if (i < text.size()) {
      const char c = text[i++];
      if (c == 'h')
        unit = 3600;
      else if (c == 'm')
        unit = 60;
      else if (c == 's')
        unit = 1;
      else
        return std::nullopt;
    } else if (any) {
      return std::nullopt;  // "1h30": a number after a unit needs its own unit
    }
    total += value * unit;
    any = true;
  }
  return total;
}

std::optional<InitFrom> Setting<InitFrom>::parse(const std::string& text) {
  if (text == "scratch") return InitFrom{InitKind::scratch, ""};
  if (text == "resume") return InitFrom{InitKind::resume, ""};
  if (text.empty()) return std::nullopt;
  return InitFrom{InitKind::checkpoint, text};
}

std::string Setting<InitFrom>::text(const InitFrom& value) {
  switch (value.kind) {
    case InitKind::scratch:
      return "scratch";
    case InitKind::resume:
      return "resume";
    case InitKind::checkpoint:
      return value.checkpoint;
  }
  return "";
}

std::optional<OptimizerKind> Setting<OptimizerKind>::parse(const std::string& text) {
  if (text == "adamw") return OptimizerKind::adamw;
  if (text == "lion") return OptimizerKind::lion;
  if (text == "muon") return OptimizerKind::muon;
  return std::nullopt;
}

std::string Setting<OptimizerKind>::text(OptimizerKind value) {
  return value == OptimizerKind::lion ? "lion" : value == OptimizerKind::muon ? "muon" : "adamw";
}

std::optional<VocabKind> Setting<VocabKind>::parse(const std::string& text) {
  if (text == "chars") return VocabKind::chars;
  if (text == "bytes") return VocabKind::bytes;
  return std::nullopt;
}

std::optional<Duration> Setting<Duration>::parse(const std::string& text) {
  const std::optional<double> seconds = parse_duration(text);
  if (!seconds) return std::nullopt;
  return Duration{*seconds};
}

// Exact: whole hours and minutes, then the rest in seconds with all its digits.
std::string Setting<Duration>::text(const Duration& value) {
  if (value.seconds == 0) return "";
  const auto whole = static_cast<int64_t>(value.seconds);
  const int64_t hours = whole / 3600, minutes = whole % 3600 / 60;
  const double rest = value.seconds - static_cast<double>(hours * 3600 + minutes * 60);
  std::string out;
  if (hours > 0) out += std::to_string(hours) + "h";
  if (minutes > 0) out += std::to_string(minutes) + "m";
  if (rest > 0) {
    char buffer[40];
    char* end = nullptr;
    for (int digits = 1; digits <= 17; ++digits) {  // the shortest text that reads back the same
      std::snprintf(buffer, sizeof buffer, "%.*g", digits, rest);
      if (std::strtod(buffer, &end) == rest) break;
    }
    out += std::string(buffer) + "s";
  }
  return out;
}

CorpusSpec TrainConfig::corpus() const { return {data_path, val_data_path, vocab, val_fraction, skip_invalid_files}; }

GptConfig TrainConfig::model_config(int64_t vocab_size) const {
  GptConfig c = model;
  c.vocab_size = vocab_size;
  return c;
}

namespace {

// A field of the config, or of the architecture it holds, as a ConfigField.
template <auto Member>
auto& field(TrainConfig& c) {
  return c.*Member;
}
template <auto Member>
auto& model_field(TrainConfig& c) {
  return c.model.*Member;
}

// The keys of where the text comes from and where a run writes, in the order the docs list them.
std::vector<ConfigKey> data_keys() {
  using C = TrainConfig;
  return {
      {"data_path", &field<&C::data_path>,
       "what to train on: a text file, a folder of text files (joined in path order), or a dataset made by "
       "gpt prepare"},
      {"val_fraction", &field<&C::val_fraction>,
       "fraction of the text (at its end) held out for validation, when there is no val_data_path"},
      {"val_data_path", &field<&C::val_data_path>, "a text file or folder to validate on instead (optional)"},
      {"vocab", &field<&C::vocab>,
       "\"chars\" (the text's Unicode characters; it must be UTF-8) or \"bytes\" (the 256 byte values, any file)"},
      {"skip_invalid_files", &field<&C::skip_invalid_files>,
       "with vocab \"chars\": leave files that are not UTF-8 out of a folder (with a warning) instead of failing"},
      {"cache_dir", &field<&C::cache_dir>,
       "where text is prepared into token files (empty: $XDG_CACHE_HOME/gpt/datasets or ~/.cache/gpt/datasets)"},
      {"out_dir", &field<&C::out_dir>, "folder for the checkpoint, config.json and metrics.jsonl"},
  };
}

// The keys of the architecture (GptConfig), in the order the docs list them.
std::vector<ConfigKey> model_keys() {
  return {
      {"n_layer", &model_field<&GptConfig::n_layer>, "number of Transformer blocks"},
      {"n_head", &model_field<&GptConfig::n_head>, "attention heads per block (must divide n_embd)"},
      {"n_embd", &model_field<&GptConfig::n_embd>, "embedding width"},
      {"block_size", &model_field<&GptConfig::block_size>, "context length in characters"},
      {"dropout", &model_field<&GptConfig::dropout>, "dropout probability in [0, 1)"},
      {"bias", &model_field<&GptConfig::bias>, "biases in Linear and LayerNorm layers"},
      {"norm", &model_field<&GptConfig::norm>,
       "\"layernorm\" (GPT-2) or \"rmsnorm\" (x / sqrt(mean(x^2) + 1e-5) * weight, no bias; Zhang & Sennrich 2019)"},
      {"mlp", &model_field<&GptConfig::mlp>,
       "the MLP's activation: \"gelu\" (exact, GPT-2), \"relu2\" (relu(x)^2; So et al. 2021, modded-nanogpt) or "
       "\"swiglu\" ((silu(x W_gate) * (x W_up)) W_down; Shazeer 2020, llama)"},
      {"mlp_hidden", &model_field<&GptConfig::mlp_hidden>,
       "the MLP's hidden width (0 = automatic: 4 n_embd; with swiglu the multiple of 32 nearest to 8 n_embd / 3)"},
      {"tie_embeddings", &model_field<&GptConfig::tie_embeddings>,
       "the output head is the token embedding wte (GPT-2; Press & Wolf 2017); false: a separate lm_head weight "
       "(modded-nanogpt, llama)"},
      {"logit_softcap", &model_field<&GptConfig::logit_softcap>,
       "0 = off; else logits = cap * tanh(logits / cap) in training, evaluation and sampling (Gemma 2, "
       "modded-nanogpt)"},
      {"pos_encoding", &model_field<&GptConfig::pos_encoding>,
       "\"learned\" (absolute position embeddings wpe, GPT-2) or \"rope\" (rotary embeddings on every head's q and "
       "k, no wpe: pair (i, i + hs/2) turns by position * rope_theta^(-2i/hs); Su et al. 2021, GPT-NeoX)"},
      {"rope_theta", &model_field<&GptConfig::rope_theta>, "RoPE's base (with pos_encoding \"rope\")"},
      {"n_kv_head", &model_field<&GptConfig::n_kv_head>,
       "key/value heads per block, dividing n_head (0 = n_head): grouped-query attention, query head h uses kv head "
       "h / (n_head / n_kv_head) (Ainslie et al. 2023)"},
      {"qk_norm", &model_field<&GptConfig::qk_norm>,
       "QK-norm: each head's q and k become x / sqrt(mean(x^2) + 1e-5), no weight, before RoPE (Henry et al. 2020, "
       "Dehghani et al. 2023, modded-nanogpt)"},
  };
}

// The keys of the loop: batches, evaluation, checkpoints, when to stop, in the order the docs list them.
std::vector<ConfigKey> loop_keys() {
  using C = TrainConfig;
  return {
      {"batch_size", &field<&C::batch_size>, "sequences per micro-batch"},
      {"max_iters", &field<&C::max_iters>, "training iterations"},
      {"eval_interval", &field<&C::eval_interval>, "evaluate train/val loss every this many iterations"},
      {"eval_iters", &field<&C::eval_iters>, "batches per evaluation"},
      {"log_interval", &field<&C::log_interval>, "log every this many iterations"},
      {"always_save_checkpoint", &field<&C::always_save_checkpoint>,
       "every evaluation's weights become model.safetensors, not only those of a new best val loss"},
      {"init_from", &field<&C::init_from>,
       "\"scratch\", \"resume\" (continue the run in out_dir), or a checkpoint to fine-tune (a model.safetensors "
       "file or a run's out_dir: its weights, a new optimizer and schedule)"},
      {"max_time", &field<&C::max_time>,
       "time budget, e.g. \"10m\", \"1h30m\", \"90s\" or \"600\" (seconds): the run's length in iterations is fixed "
       "from the measured step time so that it ends, evaluated and saved, within the budget (\"\" = off)"},
      {"patience", &field<&C::patience>,
       "stop after this many evaluations in a row without a new best val loss (0 = off)"},
  };
}

// The keys of the optimizer and its schedule, in the order the docs list them.
std::vector<ConfigKey> optimizer_keys() {
  using C = TrainConfig;
  return {
      {"optimizer", &field<&C::optimizer>,
       "\"adamw\", \"lion\" (Lion: use a 3-10x lower learning_rate, higher weight_decay) or \"muon\" (Muon on the "
       "blocks' matrices, AdamW with learning_rate on the rest)"},
      {"learning_rate", &field<&C::learning_rate>, "peak learning rate"},
      {"decay_lr", &field<&C::decay_lr>, "warmup then cosine decay (false: constant learning rate)"},
      {"warmup_iters", &field<&C::warmup_iters>, "linear warmup iterations"},
      {"lr_decay_iters", &field<&C::lr_decay_iters>, "iteration at which the cosine decay reaches min_lr"},
      {"min_lr", &field<&C::min_lr>, "final learning rate"},
      {"weight_decay", &field<&C::weight_decay>, "decoupled weight decay (on matrices and embeddings only)"},
      {"beta1", &field<&C::beta1>, "AdamW beta1"},
      {"beta2", &field<&C::beta2>, "AdamW beta2"},
      {"lion_beta1", &field<&C::lion_beta1>, "Lion beta1 (interpolation for the update's sign)"},
      {"lion_beta2", &field<&C::lion_beta2>, "Lion beta2 (momentum decay)"},
      {"muon_lr", &field<&C::muon_lr>,
       "Muon's peak learning rate for the 2-D weights inside the blocks (Jordan et al. 2024, \"Muon: An optimizer "
       "for hidden layers\", modded-nanogpt): Nesterov momentum, 5 Newton-Schulz iterations orthogonalise the "
       "update, scaled by sqrt(max(1, rows/cols)), no weight decay; follows learning_rate's schedule (times "
       "lr/learning_rate)"},
      {"muon_momentum", &field<&C::muon_momentum>, "Muon's Nesterov momentum"},
      {"grad_clip", &field<&C::grad_clip>, "clip gradients to this global norm (0 = off)"},
      {"gradient_accumulation_steps", &field<&C::gradient_accumulation_steps>, "micro-batches per optimizer step"},
  };
}

// The keys of seeds, threads, processes, number formats, in the order the docs list them.
std::vector<ConfigKey> system_keys() {
  using C = TrainConfig;
  return {
      {"seed", &field<&C::seed>,
       "random seed: keys every random stream (initialisation, batches, dropout, evaluation)"},
      {"threads", &field<&C::threads>, "worker threads per process (0 = all cores)"},
      {"zero_stage", &field<&C::zero_stage>,
       "under mpirun: 1 shards the optimizer state across processes (ZeRO-1), 0 does not"},
      {"check_replicas", &field<&C::check_replicas>,
       "under mpirun: after every step, check that all processes hold the same weights"},
      {"dtype", &field<&C::dtype>,
       "the Linear layers' matrix products: \"float32\", or \"bfloat16\" (mixed precision: inputs rounded to "
       "bfloat16, sums and everything else float32; fast on CPUs with AMX or AVX512_BF16, emulated exactly elsewhere)"},
      {"bf16_arithmetic", &field<&C::bf16_arithmetic>,
       "how bfloat16 products sum (each its own bits): \"sequential\" (one fused multiply-add chain per "
       "output, as VDPBF16PS), \"tiles\" (AMX's TDPBF16PS order; emulated, slowly, without AMX) or \"auto\" "
       "(tiles where AMX runs, else sequential; a resumed run keeps its checkpoint's)"},
  };
}

}  // namespace

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> keys = [] {
    std::vector<ConfigKey> all;
    for (auto group : {data_keys, model_keys, loop_keys, optimizer_keys, system_keys}) {
      const std::vector<ConfigKey> keys = group();
      all.insert(all.end(), keys.begin(), keys.end());
    }
    return all;
  }();
  return keys;
}

ConfigProblem find_config_problem(const TrainConfig& c) {
  auto positive = [](int64_t v) { return v > 0; };
  if (c.data_path.empty())
    return {"data_path", "is required: a text file, a folder of text files or a prepared dataset to train on"};
  if (!(c.val_fraction > 0 && c.val_fraction < 1)) return {"val_fraction", "must be in (0, 1)"};
  if (c.out_dir.empty()) return {"out_dir", "must not be empty"};
  const std::pair<const char*, int64_t> sizes[] = {{"n_layer", c.model.n_layer},
                                                   {"n_head", c.model.n_head},
                                                   {"n_embd", c.model.n_embd},
                                                   {"block_size", c.model.block_size},
                                                   {"batch_size", c.batch_size},
                                                   {"eval_interval", c.eval_interval},
                                                   {"eval_iters", c.eval_iters},
                                                   {"log_interval", c.log_interval},
                                                   {"gradient_accumulation_steps", c.gradient_accumulation_steps}};
  for (const auto& [key, value] : sizes)
    if (!positive(value)) return {key, "must be a positive integer, got " + std::to_string(value)};
  if (c.model.n_embd % c.model.n_head != 0)
    return {"n_head", "must divide n_embd (" + std::to_string(c.model.n_embd) + " is not divisible by " +
                          std::to_string(c.model.n_head) + ")"};
  if (c.model.n_kv_head < 0 || (c.model.n_kv_head > 0 && c.model.n_head % c.model.n_kv_head != 0))
    return {"n_kv_head", "must divide n_head (" + std::to_string(c.model.n_head) + "), or be 0 for n_head"};
  if (c.model.pos_encoding == PosEncoding::rope && c.model.head_size() % 2 != 0)
    return {"pos_encoding", "needs an even head size n_embd / n_head, got " + std::to_string(c.model.head_size())};
  if (!(c.model.rope_theta > 0)) return {"rope_theta", "must be positive"};
  if (!(c.model.dropout >= 0 && c.model.dropout < 1)) return {"dropout", "must be in [0, 1)"};
  if (c.model.mlp_hidden < 0) return {"mlp_hidden", "must be >= 0 (0 = automatic)"};
  if (!(c.model.logit_softcap >= 0 && std::isfinite(c.model.logit_softcap)))
    return {"logit_softcap", "must be a finite number >= 0 (0 = off)"};
  if (c.max_iters < 0) return {"max_iters", "must be >= 0"};
  if (c.patience < 0) return {"patience", "must be >= 0 (0 = off)"};
  if (!(c.learning_rate > 0)) return {"learning_rate", "must be positive"};
  if (!(c.min_lr >= 0)) return {"min_lr", "must be >= 0"};
  if (c.warmup_iters < 0) return {"warmup_iters", "must be >= 0"};
  if (c.decay_lr && c.lr_decay_iters <= c.warmup_iters)
    return {"lr_decay_iters",
            "must be greater than warmup_iters (" + std::to_string(c.warmup_iters) + ") when decay_lr is true"};
  if (!(c.weight_decay >= 0)) return {"weight_decay", "must be >= 0"};
  if (!(c.beta1 >= 0 && c.beta1 < 1)) return {"beta1", "must be in [0, 1)"};
  if (!(c.beta2 >= 0 && c.beta2 < 1)) return {"beta2", "must be in [0, 1)"};
  if (!(c.lion_beta1 >= 0 && c.lion_beta1 < 1)) return {"lion_beta1", "must be in [0, 1)"};
  if (!(c.lion_beta2 >= 0 && c.lion_beta2 < 1)) return {"lion_beta2", "must be in [0, 1)"};
  if (!(c.muon_lr > 0)) return {"muon_lr", "must be positive"};
  if (!(c.muon_momentum >= 0 && c.muon_momentum < 1)) return {"muon_momentum", "must be in [0, 1)"};
  if (!(c.grad_clip >= 0)) return {"grad_clip", "must be >= 0 (0 turns clipping off)"};
  if (c.seed < 0) return {"seed", "must be >= 0"};
  if (c.threads < 0) return {"threads", "must be >= 0 (0 = all cores)"};
  if (c.zero_stage != 0 && c.zero_stage != 1)
    return {"zero_stage", "must be 0 or 1, got " + std::to_string(c.zero_stage)};
  if (c.zero_stage == 1 && c.optimizer == OptimizerKind::muon)
    return {"zero_stage", "must be 0 with optimizer \"muon\" (its Newton-Schulz step needs each matrix whole)"};
  return {};
}

nlohmann::ordered_json to_json(const TrainConfig& config) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  auto& fields = const_cast<TrainConfig&>(config);  // read only: the fields are reached through ConfigField
  for (const ConfigKey& key : config_keys())
    std::visit(
        [&](auto field) {
          const auto& value = field(fields);
          using T = std::remove_cvref_t<decltype(value)>;
          if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, std::string>)
            j[key.name] = value;
          else
            j[key.name] = Setting<T>::text(value);
        },
        key.member);
  return j;
}

}  // namespace gpt
