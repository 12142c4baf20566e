// Internal invariants and user-facing errors.
// CHECK is for bugs in our own code (a broken invariant): it throws InternalError with file:line.
// UserError is for bad input the user can fix (config, data, checkpoint, flags): the CLI turns it
// into one message and exit code 2 (usage/input) or 1 (runtime), never an abort in library code.
#pragma once

#include <stdexcept>
#include <string>

namespace gpt {

// Bad input that the user can act on; `exit_code` is what main returns (2 input, 1 runtime).
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message, int exit_code = 2)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void fail_check(const char* file, int line, const char* condition, const std::string& message);

}  // namespace gpt

#define GPT_CHECK(cond, ...)                                                               \
  do {                                                                                     \
    if (!(cond)) ::gpt::fail_check(__FILE__, __LINE__, #cond, ::std::string{__VA_ARGS__}); \
  } while (0)
