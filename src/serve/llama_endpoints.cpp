#include "serve/llama_endpoints.h"

#include "core/check.h"
#include "data/utf8.h"
#include "kernels/gemm.h"
#include "serve/completion_request.h"
#include "serve/request_fields.h"

namespace gpt {

namespace {

using json = nlohmann::ordered_json;

// A token's text, or its bytes when they are not UTF-8 on their own (llama-server's rule).
json piece_json(const std::string& piece) {
  std::vector<char32_t> decoded;
  Utf8Error error;
  if (decode_utf8(piece, decoded, error)) return piece;
  json bytes = json::array();
  for (const char c : piece) bytes.push_back(static_cast<unsigned char>(c));
  return bytes;
}

}  // namespace

json tokenize(const Vocab& vocab, const std::string& body_text) {
  const nlohmann::json body = parse_body_object(body_text);
  if (!body.contains("content")) refuse_field("content", "is required");
  const std::string content = string_field(body["content"], "content");
  const bool with_pieces =
      body.contains("with_pieces") && !body["with_pieces"].is_null() && bool_field(body["with_pieces"], "with_pieces");
  const std::vector<int32_t> ids = encoded_field(vocab, content, "content");
  json tokens = json::array();
  for (const int32_t id : ids)
    tokens.push_back(with_pieces ? json{{"id", id}, {"piece", piece_json(vocab.decode(id))}} : json(id));
  return {{"tokens", std::move(tokens)}};
}

json detokenize(const Vocab& vocab, const std::string& body_text) {
  const nlohmann::json body = parse_body_object(body_text);
  if (!body.contains("tokens")) refuse_field("tokens", "is required");
  const nlohmann::json& tokens = body["tokens"];
  if (!tokens.is_array()) refuse_field("tokens", "must be an array of token ids, got " + shown(tokens));
  std::string content;
  for (std::size_t i = 0; i < tokens.size(); ++i)
    content += vocab.decode(static_cast<int32_t>(
        integer_field(tokens[i], "tokens[" + std::to_string(i) + "]", 0, int64_t{vocab.size()} - 1)));
  return {{"content", std::move(content)}};
}

json props_json(const ServerFacts& facts) {
  const CompletionRequest defaults;
  const SamplingSettings& s = defaults.sampling;
  const json params = {{"n_predict", defaults.max_tokens},
                       {"max_tokens", defaults.max_tokens},
                       {"temperature", s.temperature},
                       {"top_k", s.top_k},
                       {"top_p", s.top_p},
                       {"n", defaults.n},
                       {"stop", json::array()},
                       {"stream", defaults.stream},
                       {"logit_bias", json::array()}};
  return {{"default_generation_settings", {{"n_ctx", facts.n_ctx}, {"params", params}}},
          {"total_slots", facts.total_slots},
          {"max_tokens", facts.max_tokens},
          {"model_path", facts.model_path},
          {"model_alias", facts.model_alias},
          {"build_info", std::string("gpt ") + GPT_VERSION},
          {"kernels", describe_kernels()}};
}

json model_meta_json(const GptConfig& c, int64_t parameters, const Vocab& vocab) {
  json symbols = json::array();
  for (int32_t id = 0; id < vocab.size(); ++id) symbols.push_back(vocab.decode(id));
  return {{"vocab_size", c.vocab_size}, {"block_size", c.block_size}, {"n_layer", c.n_layer},
          {"n_head", c.n_head},         {"n_embd", c.n_embd},         {"parameters", parameters},
          {"vocab", symbols},           {"n_vocab", c.vocab_size},    {"n_ctx_train", c.block_size},
          {"n_params", parameters}};
}

}  // namespace gpt
