// Rotary position embeddings (RoPE; Su et al. 2021, "RoFormer"), in the rotate-half convention of
// GPT-NeoX and llama: in a head of size hs, dimensions i and i + hs/2 (i < hs/2) form a pair that
// turns by the angle pos * theta^(-2i/hs). The cos/sin table is computed once per model; the
// rotation kernels work on one row of heads at one position. No logging, no allocation.
#pragma once

#include <cstdint>
#include <vector>

namespace gpt {

struct RopeTable {
  int64_t positions = 0, half = 0;  // half = head_size / 2
  std::vector<float> cos, sin;      // [positions, half]
  bool empty() const { return positions == 0; }
};

// Angles in double (freq = pow(theta, -2i/hs), angle = pos * freq, then cos and sin), each rounded
// once to float: a fixed recipe, so every build and machine gets the same table (and PyTorch the
// same with float64 then .float()). head_size must be even.
RopeTable make_rope_table(int64_t positions, int64_t head_size, double theta);

// x, y: `heads` consecutive head vectors of size 2 * half at position pos (y may be x):
// y[i] = x[i] cos - x[i+half] sin, y[i+half] = x[i+half] cos + x[i] sin.
void rope_rotate(const RopeTable& table, int64_t pos, const float* x, float* y, int64_t heads);
// The transpose (rotation by -angle), accumulated: dx += R(pos)^T dy.
void rope_rotate_backward(const RopeTable& table, int64_t pos, const float* dy, float* dx, int64_t heads);

}  // namespace gpt
