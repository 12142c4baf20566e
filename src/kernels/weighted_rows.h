// The second half of one query's attention: the probability-weighted sum of the value rows.
#pragma once

#include <cstdint>

namespace gpt {

// out[0 .. width) = sum over j < rows of weights[j] * x[j * ldx + 0 .. width), added in j order
// from zero, each term rounded before it is added (no FMA): the same bits on every instruction set.
void weighted_row_sum(int64_t rows, int64_t width, const float* weights, const float* x, int64_t ldx, float* out);

}  // namespace gpt
