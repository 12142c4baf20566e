#include "serve/completion_request.h"

#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "serve/request_fields.h"

namespace gpt {

namespace {

using nlohmann::json;

// A string, or an array of exactly one string (what OpenAI clients send for a batch of one).
std::string prompt_field(const json& value) {
  if (value.is_array()) {
    if (!value.empty() && !value[0].is_string())
      refuse_field("prompt", "token ids are not accepted: send the text (one character per token)");
    if (value.size() != 1)
      refuse_field("prompt", "one prompt per request (an array of one string), got " + std::to_string(value.size()));
    return prompt_field(value[0]);
  }
  std::string prompt = string_field(value, "prompt");
  if (prompt.empty()) refuse_field("prompt", "must not be empty");
  return prompt;
}

std::vector<std::string> stop_field(const json& value, const ServeLimits& limits) {
  std::vector<std::string> stops;
  if (value.is_null()) return stops;
  if (value.is_string()) {
    stops.push_back(value.get<std::string>());
  } else if (value.is_array()) {
    if (static_cast<int64_t>(value.size()) > limits.max_stops)
      refuse_field("stop", "at most " + std::to_string(limits.max_stops) + " sequences");
    for (const json& s : value) stops.push_back(string_field(s, "stop"));
  } else {
    refuse_field("stop", "must be a string or an array of strings");
  }
  for (const std::string& s : stops)
    if (s.empty() || static_cast<int64_t>(s.size()) > limits.max_stop_bytes)
      refuse_field("stop", "each sequence must hold 1 to " + std::to_string(limits.max_stop_bytes) + " bytes");
  return stops;
}

// Fields of OpenAI's API we do not implement: refused unless they ask for the default behaviour.
void refuse_unsupported(const json& body) {
  if (body.contains("echo") && body["echo"] != false && !body["echo"].is_null()) refuse_field("echo", "not supported");
  if (body.contains("suffix") && !body["suffix"].is_null()) refuse_field("suffix", "not supported");
  if (body.contains("best_of") && !body["best_of"].is_null() && body["best_of"] != 1)
    refuse_field("best_of", "not supported");
}

// A bias: a number in [-100, 100], where -100 bans as `false` does (OpenAI: "-100 should result in
// a ban"); a ban is -inf, so no temperature or top-k can bring the character back.
float bias_value(const json& value) {
  if (value == false) return -std::numeric_limits<float>::infinity();
  if (!value.is_number())
    refuse_field("logit_bias", "a bias must be a number in [-100, 100] or false, got " + shown(value));
  const double bias = number_field(value, "logit_bias");
  if (bias < -100 || bias > 100) refuse_field("logit_bias", "a bias must be in [-100, 100], got " + shown(value));
  return bias == -100 ? -std::numeric_limits<float>::infinity() : static_cast<float>(bias);
}

// OpenAI's object {"id": bias, ...} (a key of digits is an id; any other key, as llama-server's,
// is text whose every character gets the bias) or llama-server's array [[id or text, bias], ...]
// (a string there is always text: [["7", 2]] favours the digit 7). A character given twice: the
// last bias counts. Sorted by id.
std::vector<std::pair<int32_t, float>> logit_bias_field(const json& value, const Vocab& vocab) {
  const int64_t V = vocab.size();
  std::map<int32_t, float> biases;
  const auto set = [&](const std::vector<int32_t>& ids, const json& bias) {
    const float b = bias_value(bias);
    for (const int32_t id : ids) biases[id] = b;
  };
  if (value.is_object()) {
    for (const auto& [key, bias] : value.items()) {
      const bool digits = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
      if (!digits) {
        set(encoded_field(vocab, key, "logit_bias"), bias);
      } else if (key.size() > 9 || std::stoll(key) >= V) {
        refuse_field("logit_bias", "token id " + key.substr(0, 20) + " is not in the vocabulary (0 .. " +
                                       std::to_string(V - 1) + ")");
      } else {
        set({static_cast<int32_t>(std::stoll(key))}, bias);
      }
    }
  } else if (value.is_array()) {
    for (const json& entry : value) {
      if (!entry.is_array() || entry.size() != 2)
        refuse_field("logit_bias", "each entry of the array form must be [id or text, bias], got " + shown(entry));
      if (entry[0].is_string())
        set(encoded_field(vocab, entry[0].get<std::string>(), "logit_bias"), entry[1]);
      else
        set({static_cast<int32_t>(integer_field(entry[0], "logit_bias", 0, V - 1))}, entry[1]);
    }
  } else {
    refuse_field("logit_bias", "must be an object {\"id\": bias} or an array [[id or text, bias], ...]");
  }
  int64_t banned = 0;
  for (const auto& [id, bias] : biases) banned += std::isinf(bias) ? 1 : 0;
  if (banned == V) refuse_field("logit_bias", "bans every character of the vocabulary");
  return {biases.begin(), biases.end()};
}

void read_sampling(const json& body, SamplingSettings& sampling) {
  if (body.contains("temperature") && !body["temperature"].is_null()) {
    sampling.temperature = number_field(body["temperature"], "temperature");
    if (sampling.temperature < 0 || sampling.temperature > 100)
      refuse_field("temperature", "must be in [0, 100] (0 = greedy)");
  }
  if (body.contains("top_k") && !body["top_k"].is_null())
    sampling.top_k = integer_field(body["top_k"], "top_k", 0, int64_t{1} << 31);
  if (body.contains("top_p") && !body["top_p"].is_null()) {
    sampling.top_p = number_field(body["top_p"], "top_p");
    if (!(sampling.top_p > 0 && sampling.top_p <= 1)) refuse_field("top_p", "must be in (0, 1]");
  }
}

}  // namespace

CompletionRequest parse_completion_request(const std::string& body_text, const ServeLimits& limits,
                                           const Vocab& vocab) {
  const json body = parse_body_object(body_text);
  refuse_unsupported(body);
  CompletionRequest request;
  if (!body.contains("prompt")) refuse_field("prompt", "is required");
  request.prompt = prompt_field(body["prompt"]);
  if (body.contains("max_tokens") && !body["max_tokens"].is_null())
    request.max_tokens = integer_field(body["max_tokens"], "max_tokens", 0, limits.max_tokens);
  read_sampling(body, request.sampling);
  if (body.contains("seed") && !body["seed"].is_null())
    request.seed = static_cast<uint64_t>(integer_field(body["seed"], "seed", 0, INT64_MAX));
  if (body.contains("stop")) request.stop = stop_field(body["stop"], limits);
  if (body.contains("n") && !body["n"].is_null()) request.n = integer_field(body["n"], "n", 1, limits.max_choices);
  if (body.contains("stream") && !body["stream"].is_null()) request.stream = bool_field(body["stream"], "stream");
  if (body.contains("logit_bias") && !body["logit_bias"].is_null())
    request.sampling.logit_bias = logit_bias_field(body["logit_bias"], vocab);
  if (body.contains("logprobs") && !body["logprobs"].is_null())
    request.logprobs = integer_field(body["logprobs"], "logprobs", 0, limits.max_logprobs);
  return request;
}

}  // namespace gpt
