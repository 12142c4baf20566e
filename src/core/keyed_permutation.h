// KeyedPermutation: a random permutation of 0 .. n-1 chosen by a 64-bit key, any element of which
// is computed on its own in O(1) memory: a four-round Feistel network on the smallest even number
// of bits that holds n, walked until it lands below n (at most four tries on average, since
// 2^bits < 4n). The walk keeps it a bijection of [0, n). So an epoch of a corpus of any size is
// ordered without storing its order, and any row of it is found without the rows before.
#pragma once

#include <cstdint>

#include "core/check.h"
#include "core/rng.h"

namespace gpt {

class KeyedPermutation {
 public:
  KeyedPermutation(uint64_t key, uint64_t n) : key_(key), n_(n) {
    GPT_CHECK(n > 0, "a permutation of nothing");
    while ((uint64_t{1} << (2 * half_bits_)) < n) ++half_bits_;
    mask_ = (uint64_t{1} << half_bits_) - 1;
  }

  // The image of i, for i < n.
  uint64_t operator()(uint64_t i) const {
    GPT_CHECK(i < n_, "index outside the permutation");
    uint64_t x = i;
    do x = encrypt(x);
    while (x >= n_);
    return x;
  }

 private:
  uint64_t encrypt(uint64_t x) const {
    uint64_t left = x >> half_bits_, right = x & mask_;
    for (uint64_t round = 0; round < 4; ++round) {
      const uint64_t mixed = splitmix64_mix(key_ ^ (right * kSplitmixIncrement) ^ (round << 56));
      const uint64_t next = left ^ (mixed & mask_);
      left = right;
      right = next;
    }
    return (left << half_bits_) | right;
  }

  uint64_t key_, n_;
  int half_bits_ = 0;
  uint64_t mask_ = 0;
};

}  // namespace gpt
