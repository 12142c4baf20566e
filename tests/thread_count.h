// Tests that compare thread counts: kernels/parallel.h's ThreadCount sets OpenMP's thread count for
// a scope and restores the one before it when the scope ends, also when a failed ASSERT leaves the
// test early.
#pragma once

#include "kernels/parallel.h"

namespace gpt::testing {

using gpt::ThreadCount;

// f() run on `threads` threads.
template <typename F>
auto on_threads(int threads, F f) {
  const ThreadCount scope(threads);
  return f();
}

}  // namespace gpt::testing
