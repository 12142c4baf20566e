#include "serve/stop_matcher.h"

#include <algorithm>

namespace gpt {

StopMatcher::Released StopMatcher::release(std::size_t end, bool stopped) {
  Released out;
  out.text = held_.substr(0, end);
  out.stopped = stopped;
  // A token is covered when any of its text lies before `end`.
  std::size_t start = 0;
  for (const std::size_t token_end : token_ends_) {
    if (start >= end) break;
    ++out.tokens;
    start = token_end;
  }
  if (stopped) {
    held_.clear();
    token_ends_.clear();
    return out;
  }
  held_.erase(0, end);
  token_ends_.erase(token_ends_.begin(), token_ends_.begin() + out.tokens);
  for (std::size_t& e : token_ends_) e -= end;
  return out;
}

StopMatcher::Released StopMatcher::push(const std::string& token_text) {
  held_ += token_text;
  token_ends_.push_back(held_.size());
  std::size_t first = std::string::npos;
  for (const std::string& stop : stops_) first = std::min(first, held_.find(stop));
  if (first != std::string::npos) return release(first, true);
  // The earliest token boundary from which the held text could still grow into a stop sequence.
  std::size_t keep_from = held_.size();
  for (std::size_t i = token_ends_.size() + 1; i-- > 0;) {
    const std::size_t boundary = i == 0 ? 0 : token_ends_[i - 1];
    const std::string_view rest = std::string_view(held_).substr(boundary);
    for (const std::string& stop : stops_)
      if (!rest.empty() && stop.compare(0, rest.size(), rest) == 0) keep_from = boundary;
  }
  return release(keep_from, false);
}

StopMatcher::Released StopMatcher::flush() { return release(held_.size(), false); }

}  // namespace gpt
