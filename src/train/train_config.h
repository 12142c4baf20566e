// TrainConfig: every setting of `gpt train`, with nanoGPT's names and defaults, and the table of
// keys that drives the JSON loader, the command-line flags, --help and the written config.json.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "data/prepare.h"
#include "kernels/dtype.h"
#include "model/gpt_config.h"

namespace gpt {

struct TrainConfig {
  // data
  std::string data_path;
  double val_fraction = 0.1;
  std::string val_data_path;
  std::string vocab = "chars";
  bool skip_invalid_files = false;
  std::string cache_dir;
  std::string out_dir = "out";
  // model: the architecture's defaults are GptConfig's
  int64_t n_layer = GptConfig{}.n_layer;
  int64_t n_head = GptConfig{}.n_head;
  int64_t n_embd = GptConfig{}.n_embd;
  int64_t block_size = GptConfig{}.block_size;
  double dropout = 0.2;  // a training setting (a model on its own runs without: GptConfig's 0)
  bool bias = GptConfig{}.bias;
  // loop
  int64_t batch_size = 64;
  int64_t max_iters = 5000;
  int64_t eval_interval = 250;
  int64_t eval_iters = 200;
  int64_t log_interval = 10;
  bool always_save_checkpoint = false;
  std::string init_from = "scratch";
  std::string max_time;  // "" = no time budget
  int64_t patience = 0;
  // optimizer
  std::string optimizer = "adamw";
  double learning_rate = 1e-3;
  bool decay_lr = true;
  int64_t warmup_iters = 100;
  int64_t lr_decay_iters = 5000;
  double min_lr = 1e-4;
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.99;
  double lion_beta1 = 0.9;
  double lion_beta2 = 0.99;
  double grad_clip = 1.0;
  int64_t gradient_accumulation_steps = 1;
  // system
  int64_t seed = 1337;
  int64_t threads = 0;
  int64_t zero_stage = 0;
  bool check_replicas = false;
  std::string dtype = "float32";

  Dtype matmul_dtype() const { return parse_dtype(dtype).value_or(Dtype::float32); }

  GptConfig model_config(int64_t vocab_size) const;
  CorpusSpec corpus() const;
};

// Seconds in a duration: "600" (seconds), "90s", "10m", "1h30m", "1.5h"; "" is 0. nullopt when invalid.
std::optional<double> parse_duration(const std::string& text);

using ConfigMember =
    std::variant<int64_t TrainConfig::*, double TrainConfig::*, bool TrainConfig::*, std::string TrainConfig::*>;

struct ConfigKey {
  const char* name;
  ConfigMember member;
  const char* help;
};

// Every key, in the order config.json is written.
const std::vector<ConfigKey>& config_keys();

// The first out-of-range value as {key, message}, or an empty key when all are valid.
struct ConfigProblem {
  std::string key, message;
};
ConfigProblem find_config_problem(const TrainConfig& config);

nlohmann::ordered_json to_json(const TrainConfig& config);

}  // namespace gpt
