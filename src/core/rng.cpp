#include "core/rng.h"

#include <cmath>
#include <numbers>

#include "core/check.h"

namespace gpt {

namespace {
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

void Rng::reseed(uint64_t seed) {
  for (auto& word : s_) word = splitmix64_next(seed);
}

uint64_t Rng::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

uint64_t Rng::below(uint64_t n) {
  GPT_CHECK(n > 0);
  // Reject the top sliver of the range that would make low values more likely.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = next_u64();
  while (x >= limit);
  return x % n;
}

double Rng::normal() {
  double u1 = uniform_double();
  const double u2 = uniform_double();
  if (u1 < 1e-300) u1 = 1e-300;  // log(0) guard; probability 2^-53
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace gpt
