#include "train/progress.h"

#include <unistd.h>

#include <cstdio>

namespace gpt {

ProgressLine::ProgressLine() : enabled_(::isatty(STDERR_FILENO) != 0) {}

void ProgressLine::show(const std::string& text) {
  if (!enabled_) return;
  std::fprintf(stderr, "\r\033[2K%s", text.c_str());
  std::fflush(stderr);
  visible_ = true;
}

void ProgressLine::clear() {
  if (!enabled_ || !visible_) return;
  std::fprintf(stderr, "\r\033[2K");
  std::fflush(stderr);
  visible_ = false;
}

std::string format_duration(double seconds) {
  if (!(seconds >= 0)) return "?";
  const auto s = static_cast<long long>(seconds + 0.5);
  char buffer[32];
  if (s >= 3600)
    std::snprintf(buffer, sizeof buffer, "%lldh%02lldm", s / 3600, (s / 60) % 60);
  else if (s >= 60)
    std::snprintf(buffer, sizeof buffer, "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(buffer, sizeof buffer, "%llds", s);
  return buffer;
}

}  // namespace gpt
