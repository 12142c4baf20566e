// When a loop is worth a parallel region, and the column-block idiom, stated once.
// Opening an OpenMP region and joining it costs a few microseconds on two cores; below these
// sizes (in floats touched) the loop is faster on one thread. None of them changes a result:
// every parallel loop writes disjoint outputs with the same arithmetic on any thread count.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace gpt {

// OpenMP's thread count for the calling thread over a scope, restored when it ends (the default
// constructor keeps the count and restores it). A team of one must set it, not only its region's
// size: a team of one is not an active parallel level, so the parallel loops inside it would open
// teams of the default size.
class ThreadCount {
 public:
  ThreadCount() : saved_(omp_get_max_threads()) {}
  explicit ThreadCount(int threads) : ThreadCount() { omp_set_num_threads(threads); }
  ~ThreadCount() { omp_set_num_threads(saved_); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int saved_;
};

// Memory-bound elementwise loops (add, scale, dropout, residual adds, embeddings): one pass, a
// few flops per float; 64K floats (256 KB, about an L2) is where two threads start to win.
inline constexpr int64_t kParallelMinElementwise = int64_t{1} << 16;
// Row reductions (layernorm, softmax, cross-entropy, AdamW): several passes or a sqrt per
// element, so half the size pays.
inline constexpr int64_t kParallelMinRowReduction = int64_t{1} << 15;
// Elementwise loops with transcendental functions (GELU's erf and exp): about 4x the work per
// float of a plain loop.
inline constexpr int64_t kParallelMinElementwiseTranscendental = int64_t{1} << 14;
// Matrix-vector products (N * K weights streamed once).
inline constexpr int64_t kParallelMinMatVec = int64_t{1} << 14;

// Column sums over many rows (bias and layernorm gradients, embedding scatter) run over blocks of
// kColumnBlock columns: each block's accumulators stay in registers while a thread streams every
// row of it, and each block is written by one thread (no atomics, thread-count independent).
inline constexpr int64_t kColumnBlock = 64;
inline int64_t column_blocks(int64_t columns) { return (columns + kColumnBlock - 1) / kColumnBlock; }
struct IndexRange {
  int64_t begin, end;
  int64_t size() const { return end - begin; }
};
inline IndexRange column_block(int64_t block, int64_t columns) {
  return {block * kColumnBlock, std::min(columns, (block + 1) * kColumnBlock)};
}

// Thread `thread`'s contiguous part of [0, count), of a team of `team`, in whole granules (the
// last one may be short): the same split on every call, so a thread that runs the same loop again
// reads the same slice of its operands (still in its own cache), and the parts depend on the team's
// size only, never on timing.
inline IndexRange contiguous_share(int64_t count, int64_t thread, int64_t team, int64_t granule = 1) {
  const int64_t units = (count + granule - 1) / granule;
  return {std::min(count, units * thread / team * granule), std::min(count, units * (thread + 1) / team * granule)};
}

}  // namespace gpt
