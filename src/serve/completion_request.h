// A POST /v1/completions body, read and checked: OpenAI's legacy completions fields (and
// llama-server's top_k and logit_bias forms) with `gpt sample`'s defaults for the sampling ones, so the same request
// and seed give `gpt sample`'s text. Anything wrong is a RequestError naming the field.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/vocab.h"
#include "sample/sampling.h"

namespace gpt {

// A client's mistake (HTTP 4xx) or the server's refusal (503): the status, a message the client
// can act on, and the request field it is about ("" when none).
class RequestError : public std::runtime_error {
 public:
  RequestError(int status, const std::string& message, std::string param = "")
      : std::runtime_error(message), status_(status), param_(std::move(param)) {}
  int status() const { return status_; }
  const std::string& param() const { return param_; }

 private:
  int status_;
  std::string param_;
};

// What a server accepts: the bounds that make a request's memory and time finite.
struct ServeLimits {
  int64_t max_tokens = 4096;  // per choice
  int64_t max_choices = 8;    // n
  int64_t max_stops = 4;
  int64_t max_stop_bytes = 64;
  int64_t max_logprobs = 20;
};

struct CompletionRequest {
  std::string prompt;
  int64_t max_tokens = 16;  // OpenAI's default
  SamplingSettings sampling;
  std::optional<uint64_t> seed;  // none: the server draws one (and reports it)
  std::vector<std::string> stop;
  int64_t n = 1;
  bool stream = false;
  std::optional<int64_t> logprobs;  // top alternatives per character; none: no logprobs at all
};

// Throws RequestError(400, ...) for malformed JSON, a wrong type, a value out of range or a field
// we do not implement with a value other than its default (echo, suffix, best_of). `vocab`
// resolves logit_bias's ids and characters.
CompletionRequest parse_completion_request(const std::string& body, const ServeLimits& limits, const Vocab& vocab);

}  // namespace gpt
