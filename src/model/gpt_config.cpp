#include "model/gpt_config.h"

#include <nlohmann/json.hpp>

#include "core/check.h"

namespace gpt {

nlohmann::json GptConfig::to_json() const {
  nlohmann::json j = {{"n_layer", n_layer},       {"n_head", n_head},   {"n_embd", n_embd}, {"block_size", block_size},
                      {"vocab_size", vocab_size}, {"dropout", dropout}, {"bias", bias}};
  // The modern-architecture keys only when set, so a model of today's architecture is written
  // with the same bytes as before them (and older builds read it).
  if (norm != Norm::layernorm) j["norm"] = norm_name(norm);
  if (mlp != Activation::gelu) j["mlp"] = activation_name(mlp);
  if (mlp_hidden != 0) j["mlp_hidden"] = mlp_hidden;
  if (!tie_embeddings) j["tie_embeddings"] = false;
  if (logit_softcap != 0) j["logit_softcap"] = logit_softcap;
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
  if (c.n_embd % c.n_head != 0)
    throw UserError(source + ": model config n_embd " + std::to_string(c.n_embd) + " is not divisible by n_head " +
                        std::to_string(c.n_head),
                    ExitCode::runtime);
  return c;
}

}  // namespace gpt
