#include "serve/inspection.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"
#include "core/rng.h"
#include "inspect/head_scores.h"
#include "sample/sampling.h"
#include "sample/text_generation.h"
#include "serve/completion_request.h"
#include "serve/request_fields.h"

namespace gpt {

namespace {

using nlohmann::json;

constexpr uint64_t kInductionSeed = 1337;  // gpt heads' default --seed

// Attention capture on for one scope: the engine's batched appends need it off again, even
// after a throw.
class Capturing {
 public:
  explicit Capturing(Generator& generator) : generator_(generator) { generator_.set_capture_attention(true); }
  ~Capturing() { generator_.set_capture_attention(false); }
  Capturing(const Capturing&) = delete;
  Capturing& operator=(const Capturing&) = delete;

 private:
  Generator& generator_;
};

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

int64_t inspect_max_length(const GptConfig& c, int64_t max_attention) {
  const int64_t heads = c.n_layer * c.n_head;
  int64_t T = c.block_size;
  while (T > 2 && heads * T * (T + 1) / 2 > max_attention) --T;
  return T;
}

InspectRequest parse_inspect_request(const Vocab& vocab, const std::string& body_text, int64_t max_length) {
  const json body = json::parse(body_text, nullptr, false);
  if (body.is_discarded() || !body.is_object()) throw RequestError(400, "the body must be a JSON object");
  if (!body.contains("text") || !body["text"].is_string())
    throw RequestError(400, "text: a string is required", "text");
  InspectRequest request;
  request.ids = encoded_field(vocab, body["text"].get<std::string>(), "text");
  request.max_length = max_length;
  request.dropped = crop_prompt(request.ids, max_length);
  if (request.ids.size() < 2) throw RequestError(400, "text: at least 2 characters are needed", "text");
  if (body.contains("top_k")) {
    const json& k = body["top_k"];
    if (!k.is_number_integer() || k.get<int64_t>() < 1 || k.get<int64_t>() > kMaxInspectTop)
      throw RequestError(400, "top_k: an integer in [1, " + std::to_string(kMaxInspectTop) + "]", "top_k");
    request.top_k = k.get<int64_t>();
  }
  return request;
}

Inspector::Inspector(Gpt& model, Generator& generator, int64_t sequence, int64_t max_attention)
    : model_(model),
      generator_(generator),
      sequence_(sequence),
      max_attention_(max_attention),
      max_length_(inspect_max_length(model.config(), max_attention)) {
  GPT_CHECK(model.config().block_size >= 4, "inspect needs block_size >= 4");
  GPT_CHECK(sequence >= 0 && sequence < generator.batch(), "inspector's sequence");
}

// gpt heads' induction test (a random sequence of L = block_size / 2 characters, twice): its
// second half runs in chunks whose captured weights stay within max_attention.
const std::vector<double>& Inspector::induction_scores() {
  if (induction_) return *induction_;
  const GptConfig& c = model_.config();
  const int64_t L = c.block_size / 2, heads = c.n_layer * c.n_head;
  Rng rng(kInductionSeed);
  std::vector<int32_t> repeated(static_cast<std::size_t>(2 * L));
  for (int64_t i = 0; i < L; ++i)
    repeated[i] = repeated[i + L] = static_cast<int32_t>(rng.below(static_cast<uint64_t>(c.vocab_size)));
  const std::vector<int64_t> one{sequence_};
  generator_.reset(sequence_);
  generator_.append_to(one, repeated.data(), L);
  const int64_t chunk = std::clamp<int64_t>(max_attention_ / (heads * 2 * L), 1, L);
  std::vector<double> totals(static_cast<std::size_t>(heads), 0.0);
  {
    Capturing capturing(generator_);
    for (int64_t begin = L; begin < 2 * L; begin += chunk) {
      const int64_t n = std::min(chunk, 2 * L - begin), width = begin + n;
      generator_.append_to(one, repeated.data() + begin, n);
      const std::vector<float>& A = generator_.captured_attention();  // [heads][n][width]
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < n; ++i) totals[h] += A[(h * n + i) * width + (begin + i - L + 1)];
    }
  }
  generator_.reset(sequence_);
  for (double& total : totals) total /= static_cast<double>(L);
  induction_ = std::move(totals);
  return *induction_;
}

Inspection Inspector::run(InspectRequest request) {
  const GptConfig& c = model_.config();
  const auto n = static_cast<int64_t>(request.ids.size());
  GPT_CHECK(n >= 2 && n <= max_length_, "inspection length");
  const std::vector<double>& induction = induction_scores();
  Inspection out;
  generator_.reset(sequence_);
  {
    Capturing capturing(generator_);
    generator_.append_to({sequence_}, request.ids.data(), n, &out.logits);
    out.attention = generator_.take_captured_attention();  // [heads][n][n]: the sequence starts empty
  }
  generator_.reset(sequence_);
  for (int64_t l = 0; l < c.n_layer; ++l)
    for (int64_t h = 0; h < c.n_head; ++h) {
      const int64_t i = l * c.n_head + h;
      out.head_labels.push_back(head_scores(l, h, out.attention.data() + i * n * n, n, induction[i]).label);
    }
  out.request = std::move(request);
  return out;
}

json inspection_json(const Vocab& vocab, const GptConfig& c, const Inspection& inspection) {
  const InspectRequest& request = inspection.request;
  const auto n = static_cast<int64_t>(request.ids.size());
  const int64_t V = c.vocab_size;
  json out = {
      {"dropped", request.dropped}, {"max_length", request.max_length}, {"n_layer", c.n_layer}, {"n_head", c.n_head}};
  json tokens = json::array();
  for (const int32_t id : request.ids) tokens.push_back(vocab.decode(id));
  out["tokens"] = std::move(tokens);
  std::vector<double> probs(static_cast<std::size_t>(V));
  std::vector<int32_t> order(static_cast<std::size_t>(V));
  json positions = json::array();
  for (int64_t t = 0; t < n; ++t) {
    const int32_t next = t + 1 < n ? request.ids[t + 1] : -1;
    positions.push_back(position_entry(vocab, inspection.logits.data() + t * V, V, request.top_k, next, probs, order));
  }
  out["positions"] = std::move(positions);
  json labels = json::array(), attention = json::array();
  for (int64_t l = 0; l < c.n_layer; ++l) {
    json layer_labels = json::array(), layer = json::array();
    for (int64_t h = 0; h < c.n_head; ++h) {
      layer_labels.push_back(inspection.head_labels[l * c.n_head + h]);
      const float* map = inspection.attention.data() + (l * c.n_head + h) * n * n;
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
