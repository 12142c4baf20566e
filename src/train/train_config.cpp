#include "train/train_config.h"

#include <cmath>
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

CorpusSpec TrainConfig::corpus() const {
  return {data_path, val_data_path, parse_vocab_kind(vocab, "vocab"), val_fraction, skip_invalid_files};
}

GptConfig TrainConfig::model_config(int64_t vocab_size) const {
  GptConfig c;
  c.n_layer = n_layer;
  c.n_head = n_head;
  c.n_embd = n_embd;
  c.block_size = block_size;
  c.vocab_size = vocab_size;
  c.dropout = static_cast<float>(dropout);
  c.bias = bias;
  return c;
}

const std::vector<ConfigKey>& config_keys() {
  using C = TrainConfig;
  static const std::vector<ConfigKey> keys = {
      {"data_path", &C::data_path,
       "what to train on: a text file, a folder of text files (joined in path order), or a dataset made by "
       "gpt prepare"},
      {"val_fraction", &C::val_fraction,
       "fraction of the text (at its end) held out for validation, when there is no val_data_path"},
      {"val_data_path", &C::val_data_path, "a text file or folder to validate on instead (optional)"},
      {"vocab", &C::vocab,
       "\"chars\" (the text's Unicode characters; it must be UTF-8) or \"bytes\" (the 256 byte values, any file)"},
      {"skip_invalid_files", &C::skip_invalid_files,
       "with vocab \"chars\": leave files that are not UTF-8 out of a folder (with a warning) instead of failing"},
      {"cache_dir", &C::cache_dir,
       "where text is prepared into token files (empty: $XDG_CACHE_HOME/gpt/datasets or ~/.cache/gpt/datasets)"},
      {"out_dir", &C::out_dir, "folder for the checkpoint, config.json and metrics.jsonl"},
      {"n_layer", &C::n_layer, "number of Transformer blocks"},
      {"n_head", &C::n_head, "attention heads per block (must divide n_embd)"},
      {"n_embd", &C::n_embd, "embedding width"},
      {"block_size", &C::block_size, "context length in characters"},
      {"dropout", &C::dropout, "dropout probability in [0, 1)"},
      {"bias", &C::bias, "biases in Linear and LayerNorm layers"},
      {"batch_size", &C::batch_size, "sequences per micro-batch"},
      {"max_iters", &C::max_iters, "training iterations"},
      {"eval_interval", &C::eval_interval, "evaluate train/val loss every this many iterations"},
      {"eval_iters", &C::eval_iters, "batches per evaluation"},
      {"log_interval", &C::log_interval, "log every this many iterations"},
      {"always_save_checkpoint", &C::always_save_checkpoint,
       "save after every evaluation, not only when val loss improves"},
      {"init_from", &C::init_from,
       "\"scratch\", \"resume\" (continue the run in out_dir), or a checkpoint to fine-tune (a model.safetensors "
       "file or a run's out_dir: its weights, a new optimizer and schedule)"},
      {"max_time", &C::max_time,
       "time budget, e.g. \"10m\", \"1h30m\", \"90s\" or \"600\" (seconds): the run's length in iterations is fixed "
       "from the measured step time so that it ends, evaluated and saved, within the budget (\"\" = off)"},
      {"patience", &C::patience, "stop after this many evaluations in a row without a new best val loss (0 = off)"},
      {"optimizer", &C::optimizer,
       "\"adamw\" or \"lion\" (Lion: use a 3-10x lower learning_rate, higher weight_decay)"},
      {"learning_rate", &C::learning_rate, "peak learning rate"},
      {"decay_lr", &C::decay_lr, "warmup then cosine decay (false: constant learning rate)"},
      {"warmup_iters", &C::warmup_iters, "linear warmup iterations"},
      {"lr_decay_iters", &C::lr_decay_iters, "iteration at which the cosine decay reaches min_lr"},
      {"min_lr", &C::min_lr, "final learning rate"},
      {"weight_decay", &C::weight_decay, "decoupled weight decay (on matrices and embeddings only)"},
      {"beta1", &C::beta1, "AdamW beta1"},
      {"beta2", &C::beta2, "AdamW beta2"},
      {"lion_beta1", &C::lion_beta1, "Lion beta1 (interpolation for the update's sign)"},
      {"lion_beta2", &C::lion_beta2, "Lion beta2 (momentum decay)"},
      {"grad_clip", &C::grad_clip, "clip gradients to this global norm (0 = off)"},
      {"gradient_accumulation_steps", &C::gradient_accumulation_steps, "micro-batches per optimizer step"},
      {"seed", &C::seed, "random seed: keys every random stream (initialisation, batches, dropout, evaluation)"},
      {"threads", &C::threads, "worker threads per process (0 = all cores)"},
      {"zero_stage", &C::zero_stage,
       "under mpirun: 1 shards the optimizer state across processes (ZeRO-1), 0 does not"},
      {"check_replicas", &C::check_replicas,
       "under mpirun: after every step, check that all processes hold the same weights"},
      {"dtype", &C::dtype,
       "the Linear layers' matrix products: \"float32\", or \"bfloat16\" (mixed precision: inputs rounded to "
       "bfloat16, sums and everything else float32; fast on CPUs with AVX512_BF16, emulated exactly elsewhere)"},
  };
  return keys;
}

ConfigProblem find_config_problem(const TrainConfig& c) {
  auto positive = [](int64_t v) { return v > 0; };
  if (c.data_path.empty())
    return {"data_path", "is required: a text file, a folder of text files or a prepared dataset to train on"};
  if (!(c.val_fraction > 0 && c.val_fraction < 1)) return {"val_fraction", "must be in (0, 1)"};
  if (c.vocab != "chars" && c.vocab != "bytes")
    return {"vocab", "must be \"chars\" or \"bytes\", got \"" + c.vocab + "\""};
  if (c.out_dir.empty()) return {"out_dir", "must not be empty"};
  const std::pair<const char*, int64_t> sizes[] = {{"n_layer", c.n_layer},
                                                   {"n_head", c.n_head},
                                                   {"n_embd", c.n_embd},
                                                   {"block_size", c.block_size},
                                                   {"batch_size", c.batch_size},
                                                   {"eval_interval", c.eval_interval},
                                                   {"eval_iters", c.eval_iters},
                                                   {"log_interval", c.log_interval},
                                                   {"gradient_accumulation_steps", c.gradient_accumulation_steps}};
  for (const auto& [key, value] : sizes)
    if (!positive(value)) return {key, "must be a positive integer, got " + std::to_string(value)};
  if (c.n_embd % c.n_head != 0)
    return {"n_head", "must divide n_embd (" + std::to_string(c.n_embd) + " is not divisible by " +
                          std::to_string(c.n_head) + ")"};
  if (!(c.dropout >= 0 && c.dropout < 1)) return {"dropout", "must be in [0, 1)"};
  if (c.max_iters < 0) return {"max_iters", "must be >= 0"};
  if (c.init_from.empty())
    return {"init_from", "must be \"scratch\", \"resume\" or the path of a checkpoint to fine-tune"};
  if (!parse_duration(c.max_time))
    return {"max_time",
            "expected a duration such as \"10m\", \"1h30m\", \"90s\" or \"600\" (seconds), got \"" + c.max_time + "\""};
  if (c.patience < 0) return {"patience", "must be >= 0 (0 = off)"};
  if (c.optimizer != "adamw" && c.optimizer != "lion")
    return {"optimizer", "must be \"adamw\" or \"lion\", got \"" + c.optimizer + "\""};
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
  if (!(c.grad_clip >= 0)) return {"grad_clip", "must be >= 0 (0 turns clipping off)"};
  if (c.seed < 0) return {"seed", "must be >= 0"};
  if (c.threads < 0) return {"threads", "must be >= 0 (0 = all cores)"};
  if (!parse_dtype(c.dtype)) return {"dtype", "must be \"float32\" or \"bfloat16\", got \"" + c.dtype + "\""};
  if (c.zero_stage != 0 && c.zero_stage != 1)
    return {"zero_stage", "must be 0 or 1, got " + std::to_string(c.zero_stage)};
  return {};
}

nlohmann::ordered_json to_json(const TrainConfig& config) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const ConfigKey& key : config_keys()) std::visit([&](auto member) { j[key.name] = config.*member; }, key.member);
  return j;
}

}  // namespace gpt
