// POST /inspect: what the model computes on a text, for the playground: after every character,
// the distribution of the next one (its top entries and the probability of the character that
// did come next), and where every layer's heads looked, labelled as `gpt heads` labels them on
// the same text (inspect/head_scores.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "data/vocab.h"
#include "model/gpt.h"

namespace gpt {

constexpr int64_t kMaxInspectTop = 100;

// body: {"text": string (2+ characters of the vocabulary; only the last block_size are inspected),
// "top_k": 1 .. 100 (default 10)}. Throws RequestError for a bad body. Runs the model: call it on
// the engine's thread.
nlohmann::json inspect_text(Gpt& model, const Vocab& vocab, const std::string& body);

}  // namespace gpt
