// Tests that compare thread counts: set OpenMP's thread count for a scope and restore the one
// before it when the scope ends, also when a failed ASSERT leaves the test early.
#pragma once

#include <omp.h>

namespace gpt::testing {

class ThreadCount {
 public:
  ThreadCount() : saved_(omp_get_max_threads()) {}  // keeps the count, restores it at the end
  explicit ThreadCount(int threads) : ThreadCount() { omp_set_num_threads(threads); }
  ~ThreadCount() { omp_set_num_threads(saved_); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int saved_;
};

// f() run on `threads` threads.
template <typename F>
auto on_threads(int threads, F f) {
  const ThreadCount scope(threads);
  return f();
}

}  // namespace gpt::testing
