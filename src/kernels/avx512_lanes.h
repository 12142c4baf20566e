// The ragged end of a 16-lane AVX-512 loop: which lanes of the last vector hold values. One helper
// for the hand-written loops (softmax rows, dropout masks, the GEMM's packing). x86-64 only.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace gpt {

// The first n of 16 lanes as a mask: none for n <= 0, all for n >= 16.
inline __mmask16 first_lanes(int64_t n) { return static_cast<__mmask16>((1u << std::clamp<int64_t>(n, 0, 16)) - 1); }

}  // namespace gpt
