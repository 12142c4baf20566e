#include "cli/stop_signal.h"

#include <unistd.h>

#include <csignal>

namespace gpt {

namespace {

std::atomic<int> g_stop_signal{0};

extern "C" void on_stop_signal(int signal) {
  if (g_stop_signal.load() != 0 && signal == SIGINT) _exit(130);  // second Ctrl-C: leave now
  g_stop_signal.store(signal);
}

}  // namespace

StopSignalScope::StopSignalScope() {
  g_stop_signal.store(0);
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

StopSignalScope::~StopSignalScope() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

const std::atomic<int>* StopSignalScope::signal() const { return &g_stop_signal; }

}  // namespace gpt
