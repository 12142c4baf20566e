#include "kernels/rope.h"

#include <cmath>

#include "core/check.h"

namespace gpt {

RopeTable make_rope_table(int64_t positions, int64_t head_size, double theta) {
  GPT_CHECK(head_size % 2 == 0 && positions >= 1, "rope needs an even head size");
  RopeTable t;
  t.positions = positions;
  t.half = head_size / 2;
  t.cos.resize(static_cast<std::size_t>(positions * t.half));
  t.sin.resize(t.cos.size());
  for (int64_t i = 0; i < t.half; ++i) {
    const double freq = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(head_size));
    for (int64_t p = 0; p < positions; ++p) {
      const double angle = static_cast<double>(p) * freq;
      t.cos[static_cast<std::size_t>(p * t.half + i)] = static_cast<float>(std::cos(angle));
      t.sin[static_cast<std::size_t>(p * t.half + i)] = static_cast<float>(std::sin(angle));
    }
  }
  return t;
}

namespace {

// y = R(pos) x, or (kTranspose) y += R(pos)^T x, the rotation by -angle that backward applies.
template <bool kTranspose>
void rotate_heads(const RopeTable& table, int64_t pos, const float* x, float* y, int64_t heads) {
  const int64_t half = table.half;
  const float* c = table.cos.data() + pos * half;
  const float* s = table.sin.data() + pos * half;
  for (int64_t h = 0; h < heads; ++h) {
    const float* xh = x + h * 2 * half;
    float* yh = y + h * 2 * half;
    for (int64_t i = 0; i < half; ++i) {
      const float a = xh[i], b = xh[i + half];  // read both first: y may be x
      if constexpr (kTranspose) {
        yh[i] += a * c[i] + b * s[i];
        yh[i + half] += b * c[i] - a * s[i];
      } else {
        yh[i] = a * c[i] - b * s[i];
        yh[i + half] = b * c[i] + a * s[i];
      }
    }
  }
}

}  // namespace

void rope_rotate(const RopeTable& table, int64_t pos, const float* x, float* y, int64_t heads) {
  rotate_heads<false>(table, pos, x, y, heads);
}

void rope_rotate_backward(const RopeTable& table, int64_t pos, const float* dy, float* dx, int64_t heads) {
  rotate_heads<true>(table, pos, dy, dx, heads);
}

}  // namespace gpt
