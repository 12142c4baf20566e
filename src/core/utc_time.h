// The current time as ISO 8601 UTC ("2026-12-01T04:18:10Z"), for files people read.
#pragma once

#include <ctime>
#include <string>

namespace gpt {

inline std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace gpt
