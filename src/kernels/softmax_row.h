// In-place softmax of one row of scores times `scale`: the inner step of attention and of the
// softmax op. The max is subtracted first so exp never overflows; exp is fast_exp, in loops that
// vectorise; the sum runs in index order, so results do not depend on the code path.
#pragma once

#include <cstdint>

namespace gpt {

// row[0 .. n) <- softmax(scale * row[0 .. n)); n >= 1.
void softmax_row(float* row, int64_t n, float scale);

}  // namespace gpt
