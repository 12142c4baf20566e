// Carrying an exception out of a thread or an OpenMP region to the thread that waits for it. An
// exception leaving a thread's function ends in std::terminate, and one leaving a parallel
// region's block is undefined (libgomp terminates): either way no message and no exit code of
// ours. So each thread runs its work through capture(); the first exception any of them throws is
// kept, and the waiting thread calls rethrow() after the join or the region's end, where main
// turns it into its message and exit code. Capturing allocates nothing, so hot loops may use it.
// It does not make barriers safe: a thread that throws before a barrier leaves its team waiting.
#pragma once

#include <atomic>
#include <exception>
#include <utility>

namespace gpt {

class FirstFailure {
 public:
  // Runs work() and keeps what it throws; once any work has failed, later work is skipped (its
  // results would not be used).
  template <class Work>
  void capture(Work&& work) noexcept {
    if (failed()) return;
    try {
      std::forward<Work>(work)();
    } catch (...) {
      keep(std::current_exception());
    }
  }
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  // After the threads joined or the region ended (or under the lock the workers captured under):
  // throws the first failure, once.
  void rethrow() {
    if (first_) std::rethrow_exception(std::exchange(first_, nullptr));
  }

 private:
  void keep(std::exception_ptr failure) noexcept {
    bool expected = false;
    if (failed_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) first_ = std::move(failure);
  }

  std::atomic<bool> failed_{false};
  std::exception_ptr first_;  // written by the first failing thread only
};

}  // namespace gpt
