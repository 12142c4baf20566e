// llama-server's small endpoints, for a character model and free of any HTTP library: what
// POST /tokenize, POST /detokenize and GET /props answer, and the `meta` of /v1/models, in
// llama-server's field names (tools/server/README.md). A malformed body is a RequestError naming
// the field; a body is read only after the access checks let it through.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "data/vocab.h"
#include "model/gpt_config.h"

namespace gpt {

// {"content": text, "with_pieces": bool} -> {"tokens": [id, ...]}, or with pieces
// {"tokens": [{"id", "piece"}, ...]} where a piece that is not UTF-8 on its own (a byte
// vocabulary's byte) is its list of bytes, as llama-server's. A character outside the vocabulary
// is a 400 naming it and its position.
nlohmann::ordered_json tokenize(const Vocab& vocab, const std::string& body);

// {"tokens": [id, ...]} -> {"content": text}; an id outside [0, vocab size) is a 400 naming its index.
nlohmann::ordered_json detokenize(const Vocab& vocab, const std::string& body);

// What GET /props tells: the settings a completion gets when it names none, the context, the slots,
// the model and the build.
struct ServerFacts {
  int64_t n_ctx = 0;        // block_size
  int64_t total_slots = 0;  // --max_clients
  int64_t max_tokens = 0;   // --max_tokens, the most a choice may ask for
  std::string model_path, model_alias;
};
nlohmann::ordered_json props_json(const ServerFacts& facts);

// /v1/models' `meta`: ours (vocab_size, block_size, n_layer, n_head, n_embd, parameters, vocab)
// and llama-server's (n_vocab, n_ctx_train, n_embd, n_params).
nlohmann::ordered_json model_meta_json(const GptConfig& config, int64_t parameters, const Vocab& vocab);

}  // namespace gpt
