// Starts the gpt binary as a child process (output to a file), so tests can signal it, kill it,
// or limit its file sizes as the world would.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace gpt::testing {

class ChildProcess {
 public:
  // args: gpt's arguments. file_size_limit > 0 sets RLIMIT_FSIZE in the child.
  ChildProcess(const std::vector<std::string>& args, const std::string& log_path, long file_size_limit = 0)
      : ChildProcess(GPT_BINARY, args, log_path, file_size_limit) {}
  // Another program (a launcher such as mpirun) with its arguments.
  ChildProcess(const std::string& program, const std::vector<std::string>& args, const std::string& log_path,
               long file_size_limit = 0) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);  // its own process group: everything it starts can be ended together
      const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      if (file_size_limit > 0) {
        rlimit limit{static_cast<rlim_t>(file_size_limit), static_cast<rlim_t>(file_size_limit)};
        ::setrlimit(RLIMIT_FSIZE, &limit);
      }
      std::vector<char*> argv;
      std::string binary = program;
      argv.push_back(binary.data());
      std::vector<std::string> copy = args;
      for (auto& a : copy) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(binary.c_str(), argv.data());
      ::_exit(127);
    }
    // The parent sets the group too: a test that fails at once would otherwise kill(-pid) before
    // the child's setpgid, signal no group, and wait forever for a child still running.
    ::setpgid(pid_, pid_);
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // A test that leaves early (a failed ASSERT) leaves nothing running: the child and whatever
  // it started (mpirun's processes) are killed.
  ~ChildProcess() {
    if (waited_) return;
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  void signal(int sig) { ::kill(pid_, sig); }
  // The child and everything it started (mpirun's processes).
  void signal_all(int sig) { ::kill(-pid_, sig); }
  // Exit code, or 128 + signal number when killed.
  int wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    waited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // As wait(), or nullopt when the child is still running after `limit` (the destructor kills it).
  std::optional<int> wait_for(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        waited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

 private:
  pid_t pid_;
  bool waited_ = false;
};

}  // namespace gpt::testing
