#include "serve/completion_request.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace gpt {

namespace {

using nlohmann::json;

[[noreturn]] void refuse(const std::string& field, const std::string& message) {
  throw RequestError(400, field + ": " + message, field);
}

// A value for an error message: never an array or object, whose dump recurses as deep as the
// client nested it (a megabyte of brackets would overflow the stack).
std::string shown(const json& value) {
  return value.is_structured() ? "an " + std::string(value.type_name()) : value.dump().substr(0, 80);
}

// An integer in [low, high]; JSON floats with an integral value (2.0) count as integers.
int64_t integer_field(const json& value, const std::string& field, int64_t low, int64_t high) {
  double number = 0;
  if (value.is_number_unsigned()) {  // may exceed int64_t
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(high) || static_cast<int64_t>(u) < low)
      refuse(field, "must be in [" + std::to_string(low) + ", " + std::to_string(high) + "], got " + shown(value));
    return static_cast<int64_t>(u);
  }
  if (value.is_number_integer()) {
    number = static_cast<double>(value.get<int64_t>());
  } else if (value.is_number_float() && std::nearbyint(value.get<double>()) == value.get<double>() &&
             std::fabs(value.get<double>()) < 0x1p62) {
    number = value.get<double>();
  } else {
    refuse(field, "must be an integer, got " + shown(value));
  }
  if (number < static_cast<double>(low) || number > static_cast<double>(high))
    refuse(field, "must be in [" + std::to_string(low) + ", " + std::to_string(high) + "], got " + shown(value));
  return static_cast<int64_t>(number);
}

double number_field(const json& value, const std::string& field) {
  if (!value.is_number()) refuse(field, "must be a number, got " + shown(value));
  const double number = value.get<double>();
  if (!std::isfinite(number)) refuse(field, "must be finite");
  return number;
}

std::string string_field(const json& value, const std::string& field) {
  if (!value.is_string()) refuse(field, "must be a string, got " + shown(value));
  return value.get<std::string>();
}

// A string, or an array of exactly one string (what OpenAI clients send for a batch of one).
std::string prompt_field(const json& value) {
  if (value.is_array()) {
    if (!value.empty() && !value[0].is_string())
      refuse("prompt", "token ids are not accepted: send the text (one character per token)");
    if (value.size() != 1)
      refuse("prompt", "one prompt per request (an array of one string), got " + std::to_string(value.size()));
    return prompt_field(value[0]);
  }
  std::string prompt = string_field(value, "prompt");
  if (prompt.empty()) refuse("prompt", "must not be empty");
  return prompt;
}

std::vector<std::string> stop_field(const json& value, const ServeLimits& limits) {
  std::vector<std::string> stops;
  if (value.is_null()) return stops;
  if (value.is_string()) {
    stops.push_back(value.get<std::string>());
  } else if (value.is_array()) {
    if (static_cast<int64_t>(value.size()) > limits.max_stops)
      refuse("stop", "at most " + std::to_string(limits.max_stops) + " sequences");
    for (const json& s : value) stops.push_back(string_field(s, "stop"));
  } else {
    refuse("stop", "must be a string or an array of strings");
  }
  for (const std::string& s : stops)
    if (s.empty() || static_cast<int64_t>(s.size()) > limits.max_stop_bytes)
      refuse("stop", "each sequence must hold 1 to " + std::to_string(limits.max_stop_bytes) + " bytes");
  return stops;
}

// Fields of OpenAI's API we do not implement: refused unless they ask for the default behaviour.
void refuse_unsupported(const json& body) {
  if (body.contains("echo") && body["echo"] != false && !body["echo"].is_null()) refuse("echo", "not supported");
  if (body.contains("suffix") && !body["suffix"].is_null()) refuse("suffix", "not supported");
  if (body.contains("best_of") && !body["best_of"].is_null() && body["best_of"] != 1)
    refuse("best_of", "not supported");
  if (body.contains("logit_bias") && !body["logit_bias"].is_null() && !body["logit_bias"].empty())
    refuse("logit_bias", "not supported");
}

void read_sampling(const json& body, SamplingSettings& sampling) {
  if (body.contains("temperature") && !body["temperature"].is_null()) {
    sampling.temperature = number_field(body["temperature"], "temperature");
    if (sampling.temperature < 0 || sampling.temperature > 100)
      refuse("temperature", "must be in [0, 100] (0 = greedy)");
  }
  if (body.contains("top_k") && !body["top_k"].is_null())
    sampling.top_k = integer_field(body["top_k"], "top_k", 0, int64_t{1} << 31);
  if (body.contains("top_p") && !body["top_p"].is_null()) {
    sampling.top_p = number_field(body["top_p"], "top_p");
    if (!(sampling.top_p > 0 && sampling.top_p <= 1)) refuse("top_p", "must be in (0, 1]");
  }
}

}  // namespace

CompletionRequest parse_completion_request(const std::string& body_text, const ServeLimits& limits) {
  const json body = json::parse(body_text, nullptr, false);
  if (body.is_discarded()) throw RequestError(400, "the body is not valid JSON (or not UTF-8)");
  if (!body.is_object()) throw RequestError(400, "the body must be a JSON object");
  refuse_unsupported(body);
  CompletionRequest request;
  if (!body.contains("prompt")) refuse("prompt", "is required");
  request.prompt = prompt_field(body["prompt"]);
  if (body.contains("max_tokens") && !body["max_tokens"].is_null())
    request.max_tokens = integer_field(body["max_tokens"], "max_tokens", 0, limits.max_tokens);
  read_sampling(body, request.sampling);
  if (body.contains("seed") && !body["seed"].is_null())
    request.seed = static_cast<uint64_t>(integer_field(body["seed"], "seed", 0, INT64_MAX));
  if (body.contains("stop")) request.stop = stop_field(body["stop"], limits);
  if (body.contains("n") && !body["n"].is_null()) request.n = integer_field(body["n"], "n", 1, limits.max_choices);
  if (body.contains("stream") && !body["stream"].is_null()) {
    if (!body["stream"].is_boolean()) refuse("stream", "must be true or false");
    request.stream = body["stream"].get<bool>();
  }
  if (body.contains("logprobs") && !body["logprobs"].is_null())
    request.logprobs = integer_field(body["logprobs"], "logprobs", 0, limits.max_logprobs);
  return request;
}

}  // namespace gpt
