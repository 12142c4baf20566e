#include "serve/inspection.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"
#include "inspect/heads_analysis.h"
#include "sample/sampling.h"
#include "sample/text_generation.h"
#include "serve/completion_request.h"

namespace gpt {

namespace {

using nlohmann::json;

constexpr uint64_t kInductionSeed = 1337;  // gpt heads' default --seed

struct InspectRequest {
  std::vector<int32_t> ids;
  int64_t dropped = 0;
  int64_t top_k = 10;
};

InspectRequest parse_inspect_request(const Vocab& vocab, const std::string& body_text, int64_t block_size) {
  const json body = json::parse(body_text, nullptr, false);
  if (body.is_discarded() || !body.is_object()) throw RequestError(400, "the body must be a JSON object");
  if (!body.contains("text") || !body["text"].is_string())
    throw RequestError(400, "text: a string is required", "text");
  InspectRequest request;
  try {
    request.ids = vocab.encode(body["text"].get<std::string>(), "text");
  } catch (const UserError& e) {
    throw RequestError(400, e.what(), "text");
  }
  request.dropped = crop_prompt(request.ids, block_size);
  if (request.ids.size() < 2) throw RequestError(400, "text: at least 2 characters are needed", "text");
  if (body.contains("top_k")) {
    const json& k = body["top_k"];
    if (!k.is_number_integer() || k.get<int64_t>() < 1 || k.get<int64_t>() > kMaxInspectTop)
      throw RequestError(400, "top_k: an integer in [1, " + std::to_string(kMaxInspectTop) + "]", "top_k");
    request.top_k = k.get<int64_t>();
  }
  return request;
}

// 4 decimals are all a picture needs, and keep the attention maps' JSON small.
double rounded(double p) { return std::round(p * 1e4) / 1e4; }

// next: the id that came next, or -1 after the last position.
json position_entry(const Vocab& vocab, const float* logits, int64_t V, int64_t top_k, int32_t next,
                    std::vector<double>& probs, std::vector<int32_t>& order) {
  log_softmax(logits, V, probs);
  for (double& p : probs) p = std::exp(p);
  top_ids(probs, top_k, order);
  const int64_t k = std::min(top_k, V);
  json top = json::array();
  for (int64_t i = 0; i < k; ++i) top.push_back({{"token", vocab.decode(order[i])}, {"p", rounded(probs[order[i]])}});
  json entry = {{"top", top}};
  entry["next"] = next >= 0 ? json(vocab.decode(next)) : json(nullptr);
  entry["p_next"] = next >= 0 ? json(probs[next]) : json(nullptr);
  return entry;
}

}  // namespace

json inspect_text(Gpt& model, const Vocab& vocab, const std::string& body) {
  const GptConfig& c = model.config();
  const InspectRequest request = parse_inspect_request(vocab, body, c.block_size);
  const auto n = static_cast<int64_t>(request.ids.size());
  const int64_t V = c.vocab_size, L = c.block_size / 2;
  GPT_CHECK(L >= 2, "inspect needs block_size >= 4");
  std::vector<float> logits;
  const HeadsReportInput heads = analyze_heads(model, vocab, request.ids, L, kInductionSeed, &logits);

  json out = {{"dropped", request.dropped}, {"n_layer", c.n_layer}, {"n_head", c.n_head}};
  out["tokens"] = heads.prompt_chars;
  std::vector<double> probs(static_cast<std::size_t>(V));
  std::vector<int32_t> order(static_cast<std::size_t>(V));
  json positions = json::array();
  for (int64_t t = 0; t < n; ++t) {
    const int32_t next = t + 1 < n ? request.ids[t + 1] : -1;
    positions.push_back(position_entry(vocab, logits.data() + t * V, V, request.top_k, next, probs, order));
  }
  out["positions"] = std::move(positions);
  json labels = json::array(), attention = json::array();
  for (int64_t l = 0; l < c.n_layer; ++l) {
    json layer_labels = json::array(), layer = json::array();
    for (int64_t h = 0; h < c.n_head; ++h) {
      layer_labels.push_back(heads.scores[l * c.n_head + h].label);
      const float* map = heads.prompt_attention.data() + (l * c.n_head + h) * n * n;
      json rows = json::array();
      for (int64_t t = 0; t < n; ++t) {
        json row = json::array();
        for (int64_t j = 0; j <= t; ++j) row.push_back(rounded(map[t * n + j]));
        rows.push_back(std::move(row));
      }
      layer.push_back(std::move(rows));
    }
    labels.push_back(std::move(layer_labels));
    attention.push_back(std::move(layer));
  }
  out["head_labels"] = std::move(labels);
  out["attention"] = std::move(attention);
  return out;
}

}  // namespace gpt
