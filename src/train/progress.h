// A live one-line progress display on a terminal (stderr), cleared before each log line;
// does nothing when stderr is not a terminal, so logs in files stay clean.
#pragma once

#include <string>

namespace gpt {

class ProgressLine {
 public:
  ProgressLine();
  void show(const std::string& text);
  void clear();

 private:
  bool enabled_;
  bool visible_ = false;
};

std::string format_duration(double seconds);

}  // namespace gpt
