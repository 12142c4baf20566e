#include "model/gpt_config.h"

#include <nlohmann/json.hpp>

#include "core/check.h"

namespace gpt {

namespace {

// pos_encoding, rope_theta, n_kv_head, qk_norm: each the default when absent.
void read_attention_keys(const nlohmann::json& j, const std::string& source, GptConfig& c) {
  auto bad = [&](const char* key, const std::string& expected) {
    return UserError(source + ": model config key \"" + key + "\" is not " + expected, ExitCode::runtime);
  };
  if (j.contains("pos_encoding")) {
    const auto p =
        j["pos_encoding"].is_string() ? parse_pos_encoding(j["pos_encoding"].get<std::string>()) : std::nullopt;
    if (!p) throw bad("pos_encoding", "\"learned\" or \"rope\"");
    c.pos_encoding = *p;
  }
  if (j.contains("rope_theta")) {
    if (!j["rope_theta"].is_number() || !(j["rope_theta"].get<double>() > 0)) throw bad("rope_theta", "positive");
    c.rope_theta = j["rope_theta"].get<double>();
  }
  if (j.contains("n_kv_head")) {
    if (!j["n_kv_head"].is_number_integer() || j["n_kv_head"].get<int64_t>() <= 0 ||
        c.n_head % j["n_kv_head"].get<int64_t>() != 0)
      throw bad("n_kv_head", "a positive divisor of n_head " + std::to_string(c.n_head));
    c.n_kv_head = j["n_kv_head"].get<int64_t>();
  }
  if (j.contains("qk_norm")) {
    if (!j["qk_norm"].is_boolean()) throw bad("qk_norm", "true or false");
    c.qk_norm = j["qk_norm"].get<bool>();
  }
  if (c.pos_encoding == PosEncoding::rope && c.head_size() % 2 != 0)
    throw bad("pos_encoding", "\"rope\" with an odd head size " + std::to_string(c.head_size()));
}

}  // namespace

nlohmann::json GptConfig::to_json() const {
  nlohmann::json j = {{"n_layer", n_layer},       {"n_head", n_head},   {"n_embd", n_embd}, {"block_size", block_size},
                      {"vocab_size", vocab_size}, {"dropout", dropout}, {"bias", bias}};
  // The modern-architecture keys only when set, so a model of today's architecture is written
  // with the same bytes as before them (and older builds read it).
  if (norm != Norm::layernorm) j["norm"] = norm_name(norm);
  if (mlp != Activation::gelu) j["mlp"] = activation_name(mlp);
  if (pos_encoding != PosEncoding::learned) j["pos_encoding"] = pos_encoding_name(pos_encoding);
  if (rope_theta != 10000.0) j["rope_theta"] = rope_theta;
  if (kv_heads() != n_head) j["n_kv_head"] = kv_heads();
  if (qk_norm) j["qk_norm"] = true;
  if (mlp_hidden != 0) j["mlp_hidden"] = mlp_hidden;
  if (!tie_embeddings) j["tie_embeddings"] = false;
  if (logit_softcap != 0) j["logit_softcap"] = logit_softcap;
  if (bigram_embedding) j["bigram_embedding"] = true;
  if (value_embeddings) j["value_embeddings"] = true;
  return j;
}

GptConfig GptConfig::from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw UserError(source + ": model config is not a JSON object", ExitCode::runtime);
  GptConfig c;
  auto get_int = [&](const char* key, int64_t& out) {
    if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() <= 0)
      throw UserError(source + ": model config key \"" + key + "\" missing or not a positive integer",
                      ExitCode::runtime);
    out = j[key].get<int64_t>();
  };
  get_int("n_layer", c.n_layer);
  get_int("n_head", c.n_head);
  get_int("n_embd", c.n_embd);
  get_int("block_size", c.block_size);
  get_int("vocab_size", c.vocab_size);
  if (j.contains("dropout") && j["dropout"].is_number()) c.dropout = j["dropout"].get<double>();
  if (j.contains("bias") && j["bias"].is_boolean()) c.bias = j["bias"].get<bool>();
  if (j.contains("norm")) {
    const std::optional<Norm> norm = j["norm"].is_string() ? parse_norm(j["norm"].get<std::string>()) : std::nullopt;
    if (!norm)
      throw UserError(source + ": model config key \"norm\" is not \"layernorm\" or \"rmsnorm\"", ExitCode::runtime);
    c.norm = *norm;
  }
  if (j.contains("mlp")) {
    const std::optional<Activation> mlp =
        j["mlp"].is_string() ? parse_mlp_activation(j["mlp"].get<std::string>()) : std::nullopt;
    if (!mlp)
      throw UserError(source + ": model config key \"mlp\" is not \"gelu\", \"relu2\" or \"swiglu\"",
                      ExitCode::runtime);
    c.mlp = *mlp;
  }
  if (j.contains("mlp_hidden")) get_int("mlp_hidden", c.mlp_hidden);
  if (j.contains("tie_embeddings")) {
    if (!j["tie_embeddings"].is_boolean())
      throw UserError(source + ": model config key \"tie_embeddings\" is not true or false", ExitCode::runtime);
    c.tie_embeddings = j["tie_embeddings"].get<bool>();
  }
  if (j.contains("logit_softcap")) {
    if (!j["logit_softcap"].is_number() || !(j["logit_softcap"].get<double>() >= 0))
      throw UserError(source + ": model config key \"logit_softcap\" is not a number >= 0", ExitCode::runtime);
    c.logit_softcap = j["logit_softcap"].get<double>();
  }
  for (auto [key, field] : {std::pair{"bigram_embedding", &GptConfig::bigram_embedding},
                            std::pair{"value_embeddings", &GptConfig::value_embeddings}}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_boolean())
      throw UserError(source + ": model config key \"" + key + "\" is not true or false", ExitCode::runtime);
    c.*field = j[key].get<bool>();
  }
  if (c.n_embd % c.n_head != 0)
    throw UserError(source + ": model config n_embd " + std::to_string(c.n_embd) + " is not divisible by n_head " +
                        std::to_string(c.n_head),
                    ExitCode::runtime);
  read_attention_keys(j, source, c);
  return c;
}

}  // namespace gpt
