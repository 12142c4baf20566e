// In-place softmax of one row of scores times `scale`: the inner step of attention and of the
// softmax op. The max is subtracted first so exp never overflows; exp is fast_exp, in loops that
// vectorise; the max and the sum run in fixed lanes (kernels/lane_sum.h), so results do not
// depend on the code path.
#pragma once

#include <cstdint>

namespace gpt {

// row[0 .. n) <- softmax(scale * row[0 .. n)); n >= 1, scale > 0.
void softmax_row(float* row, int64_t n, float scale);
// The same for the first n of `width` values (n <= width), row[n .. width) <- 0: a causal row.
// The same bits as softmax_row(row, n, scale); faster when width is a multiple of 16.
void softmax_row_in_width(float* row, int64_t n, int64_t width, float scale);

}  // namespace gpt
