#include "core/check.h"

namespace gpt {

void fail_check(const char* file, int line, const char* condition, const std::string& message) {
  std::string what = std::string(file) + ":" + std::to_string(line) + ": check failed: " + condition;
  if (!message.empty()) what += " (" + message + ")";
  throw InternalError(what);
}

}  // namespace gpt
