// Internal invariants and user-facing errors.
// CHECK is for bugs in our own code (a broken invariant): it throws InternalError with file:line.
// UserError is for bad input the user can fix (config, data, checkpoint, flags): the CLI turns it
// into one message and exit code 2 (usage/input) or 1 (runtime), never an abort in library code.
#pragma once

#include <stdexcept>
#include <string>

namespace gpt {

// What main returns: 2 for usage and input errors (a config, flag, file or checkpoint to fix), 1
// for runtime failures (a disk full, a diverged run, a lost process), 128 + N after signal N.
enum class ExitCode : int { runtime = 1, input = 2 };
inline ExitCode exit_code_after_signal(int signal) { return static_cast<ExitCode>(128 + signal); }

// An error the user can act on: one message (which file, key, line or rank; what was expected)
// and the exit code main returns for it.
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message, ExitCode exit_code = ExitCode::input)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return static_cast<int>(exit_code_); }

 private:
  ExitCode exit_code_;
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
