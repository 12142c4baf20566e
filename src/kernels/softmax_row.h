// In-place softmax of one row of scores times `scale`: the inner step of attention (training and
// sampling; the softmax op keeps its own loop, which also handles fully masked rows). The max is subtracted first so
// exp never overflows; exp is fast_exp, in loops that vectorise; the max and the sum run in fixed lanes
// (kernels/lane_sum.h), so results do not depend on the code path.
#pragma once

#include <cstdint>

namespace gpt {

// row[0 .. n) <- softmax(scale * row[0 .. n)) and row[n .. width) <- 0 (a causal row: the keys
// after the query are masked); 1 <= n <= width, scale > 0. The bits of row[0 .. n) do not depend
// on width; a width that is a multiple of 16 runs on whole vectors.
void softmax_row(float* row, int64_t n, int64_t width, float scale);

// What a row's softmax needs besides its scores: max(scale * x) and 1 / (sum of the exps).
struct SoftmaxRowStats {
  float max, inv_sum;
};
// softmax_row, also giving the row's stats, so that a backward pass that recomputes the scores
// can redo the row with softmax_row_again: one pass over the row instead of three, same bits.
SoftmaxRowStats softmax_row_with_stats(float* row, int64_t n, int64_t width, float scale);
void softmax_row_again(float* row, int64_t n, int64_t width, float scale, SoftmaxRowStats stats);

}  // namespace gpt
