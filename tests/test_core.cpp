// Core pieces: the Rng's reproducibility and distributions, the arena, the parameter store.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "core/arena.h"
#include "core/param_store.h"
#include "core/rng.h"

namespace gpt {
namespace {

TEST(Rng, SameSeedSameSequenceAndKnownValues) {
  Rng a(1337), b(1337), c(1338);
  const uint64_t first = a.next_u64();
  EXPECT_EQ(first, b.next_u64());
  EXPECT_NE(first, c.next_u64());
  // Pinned value: a change of algorithm would silently change every seeded run.
  Rng pinned(0);
  EXPECT_EQ(pinned.next_u64(), 0x99EC5F36CB75F2B4ull);
}

TEST(Rng, StateRoundTrips) {
  Rng a(5);
  for (int i = 0; i < 10; ++i) a.next_u64();
  Rng b(99);
  b.set_state(a.state());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.next_u64(), b.next_u64());
}

TEST(Rng, UniformBelowAndNormalHaveTheRightMoments) {
  Rng rng(7);
  const int n = 200000;
  double su = 0, sn = 0, sn2 = 0;
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < n; ++i) {
    const float u = rng.uniform();
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    su += u;
    const double z = rng.normal();
    sn += z;
    sn2 += z * z;
    const uint64_t k = rng.below(3);
    ASSERT_LT(k, 3u);
    counts[k]++;
  }
  EXPECT_NEAR(su / n, 0.5, 0.005);
  EXPECT_NEAR(sn / n, 0.0, 0.01);
  EXPECT_NEAR(sn2 / n, 1.0, 0.02);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(counts[k] / double(n), 1.0 / 3, 0.01);
}

TEST(Arena, AlignedAndMergesChunksOnReset) {
  Arena arena(256);
  void* p = arena.allocate_bytes(10);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  for (int i = 0; i < 20; ++i) arena.allocate_bytes(1000);
  const std::size_t peak = arena.high_water_bytes();
  EXPECT_GE(peak, 20u * 1000);
  arena.reset();
  EXPECT_EQ(arena.used_bytes(), 0u);
  const std::size_t capacity = arena.capacity_bytes();
  EXPECT_GE(capacity, peak);
  for (int i = 0; i < 20; ++i) arena.allocate_bytes(1000);
  EXPECT_EQ(arena.capacity_bytes(), capacity);  // the same step now fits without growing
}

TEST(ParamStore, SlotsAreAlignedNamedAndShareOneLayout) {
  ParamStore store;
  store.add("a", Shape{3, 5});
  store.add("b", Shape{7});
  store.finalize();
  Tensor a = store.tensor("a"), b = store.tensor(1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data) % 64, 0u);
  EXPECT_EQ(b.grad() - store.grad(), b.data - store.data());
  EXPECT_EQ(store.parameter_count(), 22);
  EXPECT_EQ(store.index_of("missing"), -1);
  a.grad()[0] = 1.0f;
  store.zero_grad();
  EXPECT_EQ(a.grad()[0], 0.0f);
}

}  // namespace
}  // namespace gpt
