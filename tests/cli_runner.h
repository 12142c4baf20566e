// Runs the gpt binary as a user would and captures its exit code and output.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace gpt::testing {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together, or stdout alone
};

// With stdout_only, stderr (the logs) is discarded, as when a user pipes the output. environment:
// variables for gpt alone, as a shell reads them before a command ("GPT_MAX_ISA=avx2").
inline CommandResult run_gpt(const std::string& args, bool stdout_only = false, const std::string& environment = "") {
  const std::string command =
      environment + " " + std::string(GPT_BINARY) + " " + args + (stdout_only ? " 2>/dev/null" : " 2>&1");
  CommandResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer{};
  std::size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace gpt::testing
