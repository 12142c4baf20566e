// Ctrl-C and SIGTERM as a request to stop: while a StopSignalScope lives, the first SIGINT or
// SIGTERM is recorded (long work polls it, finishes cleanly and exits 128 + the signal); a
// second SIGINT exits at once (files are replaced atomically, so nothing is left half-written).
#pragma once

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
};

}  // namespace gpt
