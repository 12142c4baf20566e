// TrainConfig: every setting of `gpt train`, with nanoGPT's names and defaults, and the table of
// keys that drives the JSON loader, the command-line flags, --help and the written config.json.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "data/data_order.h"
#include "data/prepare.h"
#include "data/vocab.h"
#include "kernels/dtype.h"
#include "model/gpt_config.h"

namespace gpt {

// init_from: where a run's weights come from.
enum class InitKind { scratch, resume, checkpoint };
struct InitFrom {
  InitKind kind = InitKind::scratch;
  std::string checkpoint;  // kind checkpoint: a model.safetensors file or a run's out_dir to fine-tune
  bool operator==(const InitFrom&) const = default;
};

enum class OptimizerKind { adamw, lion, muon };

// The learning rate's fall from learning_rate to min_lr (lr_decay_shape): half a cosine (nanoGPT's)
// or a straight line (the cooldown of a warmup-stable-decay schedule).
enum class LrDecayShape { cosine, linear };

// A span of time, written "600" (seconds), "90s", "10m", "1h30m" or "1.5h"; 0 is none.
struct Duration {
  double seconds = 0;
  bool operator==(const Duration&) const = default;
};

struct TrainConfig {
  // data
  std::string data_path;
  double val_fraction = 0.1;
  std::string val_data_path;
  VocabKind vocab = VocabKind::chars;
  bool skip_invalid_files = false;
  std::string cache_dir;
  DataOrder data_order = DataOrder::random;
  std::string out_dir = "out";
  // model: the architecture (its defaults are GptConfig's; vocab_size comes from the data), and
  // dropout, a training setting (a model on its own runs without)
  GptConfig model{.dropout = 0.2};
  // loop
  int64_t batch_size = 64;
  int64_t max_iters = 5000;
  int64_t eval_interval = 250;
  int64_t eval_iters = 200;
  int64_t log_interval = 10;
  bool always_save_checkpoint = false;
  InitFrom init_from;
  Duration max_time;  // 0 = no time budget
  int64_t patience = 0;
  // optimizer
  OptimizerKind optimizer = OptimizerKind::adamw;
  double learning_rate = 1e-3;
  bool decay_lr = true;
  int64_t warmup_iters = 100;
  int64_t lr_decay_iters = 5000;
  double min_lr = 1e-4;
  LrDecayShape lr_decay_shape = LrDecayShape::cosine;
  double lr_cooldown_fraction = 1.0;
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.99;
  double lion_beta1 = 0.9;
  double lion_beta2 = 0.99;
  double muon_lr = 0.02;
  double muon_momentum = 0.95;
  double muon_weight_decay = 0;
  double grad_clip = 1.0;
  double ema_decay = 0;
  int64_t gradient_accumulation_steps = 1;
  // system
  int64_t seed = 1337;
  int64_t threads = 0;
  int64_t zero_stage = 0;
  bool check_replicas = false;
  DtypeSetting dtype = DtypeSetting::float32;  // "auto" until the run's start resolves it (resolve_dtype)
  Bf16Arithmetic bf16_arithmetic = Bf16Arithmetic::automatic;

  GptConfig model_config(int64_t vocab_size) const;
  // The matrix products' format: `dtype`, which must be resolved by now.
  Dtype matmul_dtype() const;
  CorpusSpec corpus() const;
};

// The text form of each kind of typed setting, as written in config files, flags and config.json:
// Setting<T>::parse (nullopt for text that is no valid value), ::text, and ::expected (what is).
template <class T>
struct Setting;
template <>
struct Setting<InitFrom> {
  static std::optional<InitFrom> parse(const std::string& text);
  static std::string text(const InitFrom& value);
  static constexpr const char* expected = "\"scratch\", \"resume\" or the path of a checkpoint to fine-tune";
};
template <>
struct Setting<OptimizerKind> {
  static std::optional<OptimizerKind> parse(const std::string& text);
  static std::string text(OptimizerKind value);
  static constexpr const char* expected = "\"adamw\", \"lion\" or \"muon\"";
};
template <>
struct Setting<LrDecayShape> {
  static std::optional<LrDecayShape> parse(const std::string& text) {
    if (text == "cosine") return LrDecayShape::cosine;
    if (text == "linear") return LrDecayShape::linear;
    return std::nullopt;
  }
  static std::string text(LrDecayShape value) { return value == LrDecayShape::cosine ? "cosine" : "linear"; }
  static constexpr const char* expected = "\"cosine\" or \"linear\"";
};
template <>
struct Setting<DtypeSetting> {
  static std::optional<DtypeSetting> parse(const std::string& text) { return parse_dtype_setting(text); }
  static std::string text(DtypeSetting value) { return dtype_setting_name(value); }
  static constexpr const char* expected = kDtypeSettingNames;
};
template <>
struct Setting<Bf16Arithmetic> {
  static std::optional<Bf16Arithmetic> parse(const std::string& text) { return parse_bf16_arithmetic(text); }
  static std::string text(Bf16Arithmetic value) { return bf16_arithmetic_name(value); }
  static constexpr const char* expected = "\"auto\", \"sequential\" or \"tiles\"";
};
template <>
struct Setting<Norm> {
  static std::optional<Norm> parse(const std::string& text) { return parse_norm(text); }
  static std::string text(Norm value) { return norm_name(value); }
  static constexpr const char* expected = "\"layernorm\" or \"rmsnorm\"";
};
template <>
struct Setting<Activation> {
  static std::optional<Activation> parse(const std::string& text) { return parse_mlp_activation(text); }
  static std::string text(Activation value) { return activation_name(value); }
  static constexpr const char* expected = "\"gelu\", \"relu2\" or \"swiglu\"";
};
template <>
struct Setting<PosEncoding> {
  static std::optional<PosEncoding> parse(const std::string& text) { return parse_pos_encoding(text); }
  static std::string text(PosEncoding value) { return pos_encoding_name(value); }
  static constexpr const char* expected = "\"learned\" or \"rope\"";
};
template <>
struct Setting<VocabKind> {
  static std::optional<VocabKind> parse(const std::string& text);
  static std::string text(VocabKind value) { return to_string(value); }
  static constexpr const char* expected = "\"chars\" or \"bytes\"";
};
template <>
struct Setting<DataOrder> {
  static std::optional<DataOrder> parse(const std::string& text) { return parse_data_order(text); }
  static std::string text(DataOrder value) { return data_order_name(value); }
  static constexpr const char* expected = "\"random\" or \"epochs\"";
};
template <>
struct Setting<Duration> {
  static std::optional<Duration> parse(const std::string& text);
  static std::string text(const Duration& value);  // "" for none, else e.g. "10m", "1h30m", "1.5s"
  static constexpr const char* expected = "a duration such as \"10m\", \"1h30m\", \"90s\" or \"600\" (seconds)";
};

// Seconds in a duration: "600" (seconds), "90s", "10m", "1h30m", "1.5h"; "" is 0. nullopt when invalid.
std::optional<double> parse_duration(const std::string& text);

// A key's place in TrainConfig: a function giving the field of a config.
template <class T>
using ConfigField = T& (*)(TrainConfig&);
using ConfigMember =
    std::variant<ConfigField<int64_t>, ConfigField<double>, ConfigField<bool>, ConfigField<std::string>,
                 ConfigField<InitFrom>, ConfigField<OptimizerKind>, ConfigField<DtypeSetting>, ConfigField<VocabKind>,
                 ConfigField<Duration>, ConfigField<Norm>, ConfigField<Activation>, ConfigField<PosEncoding>,
                 ConfigField<Bf16Arithmetic>, ConfigField<DataOrder>, ConfigField<LrDecayShape>>;

// The values a numeric key takes: lo to hi, each end included unless marked open. Checked when a
// config file or flag sets the key, so an absurd value (a budget of 1e308 hours) is an input
// error naming the key, never a run that overflows.
struct KeyRange {
  double lo, hi;
  bool lo_open = false, hi_open = false;
  bool contains(double value) const;  // false for NaN
};

struct ConfigKey {
  const char* name;
  ConfigMember member;
  const char* help;
  std::optional<KeyRange> range = {};  // every integer, number and duration key has one
};

// Every key, in the order config.json is written.
const std::vector<ConfigKey>& config_keys();

// A key's range as written in docs and errors, in the key's own terms: "[1, 1000]", "(0, 1)",
// "[0, 8760h]"; "" for a key without one.
std::string range_text(const ConfigKey& key);
// "expected an integer in [1, 1000]" when the key's value in `config` is outside its range, else "".
std::string range_problem(const ConfigKey& key, const TrainConfig& config);

// The first out-of-range value as {key, message}, or an empty key when all are valid.
struct ConfigProblem {
  std::string key, message;
};
ConfigProblem find_config_problem(const TrainConfig& config);

nlohmann::ordered_json to_json(const TrainConfig& config);

}  // namespace gpt
