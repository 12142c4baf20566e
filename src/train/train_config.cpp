#include "train/train_config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "core/check.h"

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
  return total;  // may overflow to +inf ("1e308h"): max_time's range rejects it, naming the key
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

namespace {

// The shortest text that reads back as the same double.
std::string shortest_text(double value) {
  char buffer[40];
  char* end = nullptr;
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
    if (std::strtod(buffer, &end) == value) break;
  }
  return buffer;
}

}  // namespace

// Exact: whole hours and minutes, then the rest in seconds with all its digits. A value whose
// whole seconds no int64 holds (1e300, inf; only ever out of max_time's range) is seconds alone.
std::string Setting<Duration>::text(const Duration& value) {
  if (value.seconds == 0) return "";
  if (!(value.seconds > 0 && value.seconds < 1e15)) return shortest_text(value.seconds) + "s";
  const auto whole = static_cast<int64_t>(value.seconds);
  const int64_t hours = whole / 3600, minutes = whole % 3600 / 60;
  const double rest = value.seconds - static_cast<double>(hours * 3600 + minutes * 60);
  std::string out;
  if (hours > 0) out += std::to_string(hours) + "h";
  if (minutes > 0) out += std::to_string(minutes) + "m";
  if (rest > 0) out += shortest_text(rest) + "s";
  return out;
}

CorpusSpec TrainConfig::corpus() const { return {data_path, val_data_path, vocab, val_fraction, skip_invalid_files}; }

GptConfig TrainConfig::model_config(int64_t vocab_size) const {
  GptConfig c = model;
  c.vocab_size = vocab_size;
  return c;
}

Dtype TrainConfig::matmul_dtype() const {
  const std::optional<Dtype> fixed = fixed_dtype(dtype);
  GPT_CHECK(fixed.has_value(), "dtype \"auto\" used before the run resolved it");
  return *fixed;
}

namespace {

// Where the keys' ranges end, and why. Counts of iterations: far past any run (max_time's
// unplanned length, 2^40, is set after loading). Rates, decays, clip norms and caps multiply
// float32 values: 1e30 keeps them finite there. Seeds: integers JSON tools read exactly. A budget
// of more than a year is a typo, and one of 1e308 hours is not a number of seconds. Evaluations
// keep each batch's loss until they add them in order: 1e6 batches, 8 MB.
constexpr double kMaxIterations = 1e12;
constexpr double kMaxFactor = 1e30;
constexpr double kMaxSeed = 9007199254740991;  // 2^53 - 1
constexpr double kMaxBudgetSeconds = 8760 * 3600;
constexpr double kMaxPositions = 1 << 20;
constexpr double kMaxEvalBatches = 1e6;

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
       "fraction of the text (at its end) held out for validation, when there is no val_data_path",
       KeyRange{0, 1, true, true}},
      {"val_data_path", &field<&C::val_data_path>, "a text file or folder to validate on instead (optional)"},
      {"vocab", &field<&C::vocab>,
       "\"chars\" (the text's Unicode characters; it must be UTF-8) or \"bytes\" (the 256 byte values, any file)"},
      {"skip_invalid_files", &field<&C::skip_invalid_files>,
       "with vocab \"chars\": leave files that are not UTF-8 out of a folder (with a warning) instead of failing"},
      {"cache_dir", &field<&C::cache_dir>,
       "where text is prepared into token files (empty: $XDG_CACHE_HOME/gpt/datasets or ~/.cache/gpt/datasets)"},
      {"data_order", &field<&C::data_order>,
       "how training takes its windows of block_size: \"random\" (nanoGPT's: each at a random offset, drawn on "
       "its own) or \"epochs\" (each epoch, every window of a grid with a random offset once, in a random order)"},
      {"out_dir", &field<&C::out_dir>, "folder for the checkpoint, config.json and metrics.jsonl"},
  };
}

// The keys of the architecture (GptConfig), in the order the docs list them.
std::vector<ConfigKey> model_keys() {
  return {
      {"n_layer", &model_field<&GptConfig::n_layer>, "number of Transformer blocks", KeyRange{1, 1000}},
      {"n_head", &model_field<&GptConfig::n_head>, "attention heads per block (must divide n_embd)", KeyRange{1, 4096}},
      {"n_embd", &model_field<&GptConfig::n_embd>, "embedding width", KeyRange{1, 65536}},
      {"block_size", &model_field<&GptConfig::block_size>, "context length in characters", KeyRange{1, kMaxPositions}},
      {"dropout", &model_field<&GptConfig::dropout>, "dropout probability in [0, 1)", KeyRange{0, 1, false, true}},
      {"bias", &model_field<&GptConfig::bias>, "biases in Linear and LayerNorm layers"},
      {"norm", &model_field<&GptConfig::norm>,
       "\"layernorm\" (GPT-2) or \"rmsnorm\" (x / sqrt(mean(x^2) + 1e-5) * weight, no bias; Zhang & Sennrich 2019)"},
      {"mlp", &model_field<&GptConfig::mlp>,
       "the MLP's activation: \"gelu\" (exact, GPT-2), \"relu2\" (relu(x)^2; So et al. 2021, modded-nanogpt) or "
       "\"swiglu\" ((silu(x W_gate) * (x W_up)) W_down; Shazeer 2020, llama)"},
      {"mlp_hidden", &model_field<&GptConfig::mlp_hidden>,
       "the MLP's hidden width (0 = automatic: 4 n_embd; with swiglu the multiple of 32 nearest to 8 n_embd / 3)",
       KeyRange{0, 1 << 20}},
      {"tie_embeddings", &model_field<&GptConfig::tie_embeddings>,
       "the output head is the token embedding wte (GPT-2; Press & Wolf 2017); false: a separate lm_head weight "
       "(modded-nanogpt, llama)"},
      {"logit_softcap", &model_field<&GptConfig::logit_softcap>,
       "0 = off; else logits = cap * tanh(logits / cap) in training, evaluation and sampling (Gemma 2, "
       "modded-nanogpt)",
       KeyRange{0, kMaxFactor}},
      {"bigram_embedding", &model_field<&GptConfig::bigram_embedding>,
       "adds a learned row for each pair (previous character, character) to the token embedding: a table "
       "transformer.wbe.weight of (V + 1) V rows, zero at the start, the window's first position paired with "
       "\"none\" (modded-nanogpt's bigram embedding, exact instead of hashed)"},
      {"value_embeddings", &model_field<&GptConfig::value_embeddings>,
       "every block but the first adds a learned row per character to its attention's values v: tables "
       "transformer.ve.<layer>.weight of V rows, zero at the start (modded-nanogpt's value embeddings)"},
      {"pos_encoding", &model_field<&GptConfig::pos_encoding>,
       "\"learned\" (absolute position embeddings wpe, GPT-2) or \"rope\" (rotary embeddings on every head's q and "
       "k, no wpe: pair (i, i + hs/2) turns by position * rope_theta^(-2i/hs); Su et al. 2021, GPT-NeoX)"},
      {"rope_theta", &model_field<&GptConfig::rope_theta>, "RoPE's base (with pos_encoding \"rope\")",
       KeyRange{0, kMaxFactor, true}},
      {"n_kv_head", &model_field<&GptConfig::n_kv_head>,
       "key/value heads per block, dividing n_head (0 = n_head): grouped-query attention, query head h uses kv head "
       "h / (n_head / n_kv_head) (Ainslie et al. 2023)",
       KeyRange{0, 4096}},
      {"qk_norm", &model_field<&GptConfig::qk_norm>,
       "QK-norm: each head's q and k become x / sqrt(mean(x^2) + 1e-5), no weight, before RoPE (Henry et al. 2020, "
       "Dehghani et al. 2023, modded-nanogpt)"},
  };
}

// The keys of the loop: batches, evaluation, checkpoints, when to stop, in the order the docs list them.
std::vector<ConfigKey> loop_keys() {
  using C = TrainConfig;
  return {
      {"batch_size", &field<&C::batch_size>, "sequences per micro-batch", KeyRange{1, 1 << 20}},
      {"max_iters", &field<&C::max_iters>, "training iterations", KeyRange{0, kMaxIterations}},
      {"eval_interval", &field<&C::eval_interval>, "evaluate train/val loss every this many iterations",
       KeyRange{1, kMaxIterations}},
      {"eval_iters", &field<&C::eval_iters>, "batches per evaluation", KeyRange{1, kMaxEvalBatches}},
      {"log_interval", &field<&C::log_interval>, "log every this many iterations", KeyRange{1, kMaxIterations}},
      {"always_save_checkpoint", &field<&C::always_save_checkpoint>,
       "every evaluation's weights become model.safetensors, not only those of a new best val loss"},
      {"init_from", &field<&C::init_from>,
       "\"scratch\", \"resume\" (continue the run in out_dir), or a checkpoint to fine-tune (a model.safetensors "
       "file or a run's out_dir: its weights, a new optimizer and schedule)"},
      {"max_time", &field<&C::max_time>,
       "time budget, e.g. \"10m\", \"1h30m\", \"90s\" or \"600\" (seconds): the run's length in iterations is fixed "
       "from the measured step time so that it ends, evaluated and saved, within the budget (\"\" = off)",
       KeyRange{0, kMaxBudgetSeconds}},
      {"patience", &field<&C::patience>,
       "stop after this many evaluations in a row without a new best val loss (0 = off)", KeyRange{0, kMaxIterations}},
  };
}

// The keys of the optimizer and its schedule, in the order the docs list them.
std::vector<ConfigKey> optimizer_keys() {
  using C = TrainConfig;
  return {
      {"optimizer", &field<&C::optimizer>,
       "\"adamw\", \"lion\" (Lion: use a 3-10x lower learning_rate, higher weight_decay) or \"muon\" (Muon on the "
       "blocks' matrices, AdamW with learning_rate on the rest)"},
      {"learning_rate", &field<&C::learning_rate>, "peak learning rate", KeyRange{0, kMaxFactor, true}},
      {"decay_lr", &field<&C::decay_lr>, "warmup then decay (false: constant learning rate)"},
      {"warmup_iters", &field<&C::warmup_iters>, "linear warmup iterations", KeyRange{0, kMaxIterations}},
      {"lr_decay_iters", &field<&C::lr_decay_iters>, "iteration at which the decay reaches min_lr",
       KeyRange{0, kMaxIterations}},
      {"min_lr", &field<&C::min_lr>, "final learning rate", KeyRange{0, kMaxFactor}},
      {"lr_decay_shape", &field<&C::lr_decay_shape>,
       "how the rate falls to min_lr: \"cosine\" (nanoGPT's) or \"linear\""},
      {"lr_cooldown_fraction", &field<&C::lr_cooldown_fraction>,
       "the last fraction of warmup_iters .. lr_decay_iters in which the rate falls; before it the rate stays at "
       "learning_rate (1 = nanoGPT's decay from the end of warmup; 0.4 with \"linear\": a warmup-stable-decay "
       "schedule)",
       KeyRange{0, 1, true, false}},
      {"weight_decay", &field<&C::weight_decay>, "decoupled weight decay (on matrices and embeddings only)",
       KeyRange{0, kMaxFactor}},
      {"beta1", &field<&C::beta1>, "AdamW beta1", KeyRange{0, 1, false, true}},
      {"beta2", &field<&C::beta2>, "AdamW beta2", KeyRange{0, 1, false, true}},
      {"lion_beta1", &field<&C::lion_beta1>, "Lion beta1 (interpolation for the update's sign)",
       KeyRange{0, 1, false, true}},
      {"lion_beta2", &field<&C::lion_beta2>, "Lion beta2 (momentum decay)", KeyRange{0, 1, false, true}},
      {"muon_lr", &field<&C::muon_lr>,
       "Muon's peak learning rate for the 2-D weights inside the blocks (Jordan et al. 2024, \"Muon: An optimizer "
       "for hidden layers\", modded-nanogpt): Nesterov momentum, 5 Newton-Schulz iterations orthogonalise the "
       "update, scaled by sqrt(max(1, rows/cols)), decayed by muon_weight_decay; follows learning_rate's schedule "
       "(times "
       "lr/learning_rate)",
       KeyRange{0, kMaxFactor, true}},
      {"muon_momentum", &field<&C::muon_momentum>, "Muon's Nesterov momentum", KeyRange{0, 1, false, true}},
      {"muon_weight_decay", &field<&C::muon_weight_decay>,
       "decoupled weight decay of Muon's matrices, relative to Muon's rate: W *= 1 - muon_lr (lr/learning_rate) "
       "muon_weight_decay each step (0 = none)",
       KeyRange{0, kMaxFactor}},
      {"grad_clip", &field<&C::grad_clip>, "clip gradients to this global norm (0 = off)", KeyRange{0, kMaxFactor}},
      {"ema_decay", &field<&C::ema_decay>,
       "evaluate and save an exponential moving average of the weights with this decay per step (0 = off; "
       "0.99-0.999 average the last 100-1000 steps); training goes on from the weights themselves",
       KeyRange{0, 1, false, true}},
      {"gradient_accumulation_steps", &field<&C::gradient_accumulation_steps>, "micro-batches per optimizer step",
       KeyRange{1, 1 << 20}},
  };
}

// The keys of seeds, threads, processes, number formats, in the order the docs list them.
std::vector<ConfigKey> system_keys() {
  using C = TrainConfig;
  return {
      {"seed", &field<&C::seed>, "random seed: keys every random stream (initialisation, batches, dropout, evaluation)",
       KeyRange{0, kMaxSeed}},
      {"threads", &field<&C::threads>, "worker threads per process (0 = all cores)", KeyRange{0, 4096}},
      {"zero_stage", &field<&C::zero_stage>,
       "under mpirun: 1 shards the optimizer state across processes (ZeRO-1), 0 does not", KeyRange{0, 1}},
      {"check_replicas", &field<&C::check_replicas>,
       "under mpirun: after every step, check that all processes hold the same weights"},
      {"dtype", &field<&C::dtype>,
       "the Linear layers' matrix products: \"float32\", \"bfloat16\" (mixed precision: inputs rounded to "
       "bfloat16, sums and everything else float32; fast on CPUs with AMX or AVX512_BF16, emulated exactly "
       "elsewhere) or \"auto\" (bfloat16 where this CPU multiplies bfloat16 natively, under GPT_MAX_ISA; else "
       "float32; chosen at each start, resume included, and logged)"},
      {"bf16_arithmetic", &field<&C::bf16_arithmetic>,
       "how bfloat16 products sum (each its own bits): \"sequential\" (one fused multiply-add chain per "
       "output, as VDPBF16PS), \"tiles\" (AMX's TDPBF16PS order; emulated, slowly, without AMX) or \"auto\" "
       "(tiles where AMX runs, else sequential; a resumed run keeps its checkpoint's)"},
  };
}

}  // namespace

bool KeyRange::contains(double value) const {
  return (lo_open ? value > lo : value >= lo) && (hi_open ? value < hi : value <= hi);
}

namespace {

// What a key's values are called, and one of them as the range writes it.
template <class T>
const char* kind_of_value() {
  if constexpr (std::is_same_v<T, int64_t>) return "an integer";
  if constexpr (std::is_same_v<T, Duration>) return "a duration";
  return "a number";
}
template <class T>
std::string value_text(double value) {
  if constexpr (std::is_same_v<T, int64_t>) return std::to_string(static_cast<int64_t>(value));
  if constexpr (std::is_same_v<T, Duration>) return value == 0 ? "0" : Setting<Duration>::text({value});
  return shortest_text(value);
}
template <class T>
constexpr bool is_numeric = std::is_same_v<T, int64_t> || std::is_same_v<T, double> || std::is_same_v<T, Duration>;

}  // namespace

std::string range_text(const ConfigKey& key) {
  if (!key.range) return "";
  const KeyRange& r = *key.range;
  return std::visit(
      [&](auto field) {
        using T = std::remove_reference_t<decltype(field(std::declval<TrainConfig&>()))>;
        return std::string(r.lo_open ? "(" : "[") + value_text<T>(r.lo) + ", " + value_text<T>(r.hi) +
               (r.hi_open ? ")" : "]");
      },
      key.member);
}

std::string range_problem(const ConfigKey& key, const TrainConfig& config) {
  if (!key.range) return "";
  auto& fields = const_cast<TrainConfig&>(config);  // read only: the fields are reached through ConfigField
  return std::visit(
      [&](auto field) -> std::string {
        using T = std::remove_reference_t<decltype(field(fields))>;
        if constexpr (is_numeric<T>) {
          const auto& value = field(fields);
          double number = 0;
          if constexpr (std::is_same_v<T, Duration>)
            number = value.seconds;
          else
            number = static_cast<double>(value);
          if (!key.range->contains(number))
            return std::string("expected ") + kind_of_value<T>() + " in " + range_text(key);
        }
        return "";
      },
      key.member);
}

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> keys = [] {
    std::vector<ConfigKey> all;
    for (auto group : {data_keys, model_keys, loop_keys, optimizer_keys, system_keys}) {
      const std::vector<ConfigKey> keys = group();
      all.insert(all.end(), keys.begin(), keys.end());
    }
    for (const ConfigKey& key : all)
      std::visit(
          [&](auto field) {
            using T = std::remove_reference_t<decltype(field(std::declval<TrainConfig&>()))>;
            GPT_CHECK(key.range.has_value() == is_numeric<T>,
                      std::string("config key ") + key.name + ": a range belongs to every number and only to them");
          },
          key.member);
    return all;
  }();
  return keys;
}

// Each key's own range first, then what keys say together.
ConfigProblem find_config_problem(const TrainConfig& c) {
  for (const ConfigKey& key : config_keys())
    if (std::string problem = range_problem(key, c); !problem.empty()) return {key.name, problem};
  if (c.data_path.empty())
    return {"data_path", "is required: a text file, a folder of text files or a prepared dataset to train on"};
  if (c.out_dir.empty()) return {"out_dir", "must not be empty"};
  if (c.model.n_embd % c.model.n_head != 0)
    return {"n_head", "must divide n_embd (" + std::to_string(c.model.n_embd) + " is not divisible by " +
                          std::to_string(c.model.n_head) + ")"};
  if (c.model.n_kv_head > 0 && c.model.n_head % c.model.n_kv_head != 0)
    return {"n_kv_head", "must divide n_head (" + std::to_string(c.model.n_head) + "), or be 0 for n_head"};
  if (c.model.pos_encoding == PosEncoding::rope && c.model.head_size() % 2 != 0)
    return {"pos_encoding", "needs an even head size n_embd / n_head, got " + std::to_string(c.model.head_size())};
  if (c.decay_lr && c.lr_decay_iters <= c.warmup_iters)
    return {"lr_decay_iters",
            "must be greater than warmup_iters (" + std::to_string(c.warmup_iters) + ") when decay_lr is true"};
  if (c.zero_stage == 1 && c.optimizer == OptimizerKind::muon)
    return {"zero_stage", "must be 0 with optimizer \"muon\" (its Newton-Schulz step needs each matrix whole)"};
  // Muon's rate peaks at muon_lr, or above it when min_lr exceeds learning_rate.
  const double muon_peak = c.muon_lr * std::max(1.0, c.min_lr / c.learning_rate);
  if (c.optimizer == OptimizerKind::muon && muon_peak * c.muon_weight_decay >= 1)
    return {"muon_weight_decay", "times Muon's highest rate must be below 1 (the weights are multiplied by 1 - rate " +
                                     std::string("muon_weight_decay each step), got ") +
                                     std::to_string(muon_peak * c.muon_weight_decay)};
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
