// Rng: our own seeded generator (xoshiro256** seeded through splitmix64), so that the same seed
// gives the same numbers with every compiler and standard library: we never use
// std::*_distribution, whose algorithms differ between implementations.
// The state is four 64-bit words; state()/set_state() save and restore it for checkpoints.
#pragma once

#include <array>
#include <cstdint>

namespace gpt {

// splitmix64's step: the state advances by the golden-ratio increment and the result is mixed.
// Seeds the Rng, and gives stateless per-element randomness (dropout masks: the state is
// seed + index * increment, so any element's value is computed directly, on any thread).
inline constexpr uint64_t kSplitmixIncrement = 0x9E3779B97F4A7C15ull;
inline uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
inline uint64_t splitmix64_next(uint64_t& state) { return splitmix64_mix(state += kSplitmixIncrement); }

class Rng {
 public:
  using State = std::array<uint64_t, 4>;

  explicit Rng(uint64_t seed = 1337) { reseed(seed); }
  void reseed(uint64_t seed);

  uint64_t next_u64();
  // Uniform in [0, 1) with 24 random bits, exactly representable in float.
  float uniform() { return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f; }
  // Uniform in [0, 1) with 53 random bits.
  double uniform_double() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n), unbiased (rejection sampling).
  uint64_t below(uint64_t n);
  // Standard normal by the Box-Muller transform in double precision (one value per call).
  double normal();

  State state() const { return s_; }
  void set_state(const State& s) { s_ = s; }

 private:
  State s_{};
};

}  // namespace gpt
