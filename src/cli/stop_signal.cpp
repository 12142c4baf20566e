#include "cli/stop_signal.h"

#include <unistd.h>

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
  struct sigaction stop {};
  stop.sa_handler = on_stop_signal;
  sigemptyset(&stop.sa_mask);
  stop.sa_flags = SA_RESTART;  // as std::signal installs it: interrupted reads and writes go on
  ::sigaction(SIGINT, &stop, &previous_interrupt_);
  ::sigaction(SIGTERM, &stop, &previous_terminate_);
}

StopSignalScope::~StopSignalScope() {
  ::sigaction(SIGINT, &previous_interrupt_, nullptr);
  ::sigaction(SIGTERM, &previous_terminate_, nullptr);
}

const std::atomic<int>* StopSignalScope::signal() const { return &g_stop_signal; }

}  // namespace gpt
