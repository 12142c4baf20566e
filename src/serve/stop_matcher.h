// Stop sequences over a stream of tokens: text that could still become the start of a stop
// sequence is held back, so a client never receives part of one. OpenAI's semantics: the stop
// sequence itself is not returned and generation ends at its first occurrence.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpt {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  struct Released {
    std::string text;    // what may be sent now
    int64_t tokens = 0;  // how many of the held tokens it covers (wholly, or up to a stop sequence)
    bool stopped = false;
  };
  // Adds one token's text.
  Released push(const std::string& token_text);
  // Everything still held (the text ended without completing a stop sequence).
  Released flush();

 private:
  Released release(std::size_t end, bool stopped);
  std::vector<std::string> stops_;
  std::string held_;
  std::vector<std::size_t> token_ends_;  // into held_
};

}  // namespace gpt
