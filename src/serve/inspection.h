// POST /inspect: what the model computes on a text, for the playground: after every character,
// the distribution of the next one (its top entries and the probability of the character that
// did come next), and where every layer's heads looked, labelled as `gpt heads` labels them on
// the same text (inspect/head_scores.h).
//
// Bounded: an answer holds at most `max_attention` attention weights (n_layer x n_head x T(T+1)/2
// for T characters), so only the last max_length characters are inspected (block_size for the
// models we train; fewer for a wide, deep model with a long context). The work is split by
// thread: parsing and the JSON on the caller's, the forward on the engine's, through an Inspector
// that runs on the engine's Generator (its packed weights, a sequence of its own).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "data/vocab.h"
#include "model/gpt.h"
#include "sample/generator.h"

namespace gpt {

constexpr int64_t kMaxInspectTop = 100;
// 2^21 attention weights: about 10 MB of JSON; a 6 x 6 model is inspected whole up to T = 340.
constexpr int64_t kMaxInspectAttention = int64_t{1} << 21;

// The most characters inspected: the largest T <= block_size with n_layer * n_head * T(T+1)/2 <=
// max_attention (at least 2).
int64_t inspect_max_length(const GptConfig& c, int64_t max_attention);

struct InspectRequest {
  std::vector<int32_t> ids;  // the last max_length characters of the text
  int64_t dropped = 0;       // characters cut from its front
  int64_t max_length = 0;
  int64_t top_k = 10;
};

// body: {"text": string (2+ characters of the vocabulary), "top_k": 1 .. 100 (default 10)}.
// Throws RequestError for a bad body.
InspectRequest parse_inspect_request(const Vocab& vocab, const std::string& body, int64_t max_length);

// What the engine's thread computes for a request; the caller turns it into JSON.
struct Inspection {
  InspectRequest request;
  std::vector<float> logits;             // [T, V] after every position
  std::vector<float> attention;          // [n_layer][n_head][T][T], zeros above the diagonal
  std::vector<std::string> head_labels;  // [n_layer * n_head]
};

// Runs inspections on one sequence of a Generator (its packed weights are the model's, packed
// once). The induction test's scores (L = block_size / 2, seed 1337, as `gpt heads`'s) do not
// depend on the text: computed on the first inspection, kept. Engine thread only.
class Inspector {
 public:
  Inspector(Gpt& model, Generator& generator, int64_t sequence, int64_t max_attention);
  int64_t max_length() const { return max_length_; }
  Inspection run(InspectRequest request);

 private:
  const std::vector<double>& induction_scores();

  Gpt& model_;
  Generator& generator_;
  int64_t sequence_;
  int64_t max_attention_, max_length_;
  std::optional<std::vector<double>> induction_;  // [n_layer * n_head]
};

// The answer: {dropped, max_length, n_layer, n_head, tokens, positions, head_labels, attention}.
nlohmann::json inspection_json(const Vocab& vocab, const GptConfig& c, const Inspection& inspection);

}  // namespace gpt
