// Ctrl-C and SIGTERM as a request to stop: while a StopSignalScope lives, the first SIGINT or
// SIGTERM is recorded (long work polls it, finishes cleanly and exits 128 + the signal); a
// second SIGINT exits at once (files are replaced atomically, so nothing is left half-written;
// the temporary files it leaves are removed by the next run in that folder). When the scope ends,
// the handlers it found are back.
#pragma once

#include <signal.h>

#include <atomic>

namespace gpt {

class StopSignalScope {
 public:
  StopSignalScope();
  ~StopSignalScope();
  StopSignalScope(const StopSignalScope&) = delete;
  StopSignalScope& operator=(const StopSignalScope&) = delete;

  // The signal received so far, 0 for none.
  const std::atomic<int>* signal() const;

 private:
  struct sigaction previous_interrupt_ {};
  struct sigaction previous_terminate_ {};
};

}  // namespace gpt
