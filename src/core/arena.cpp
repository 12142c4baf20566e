#include "core/arena.h"

#include <algorithm>
#include <cstring>

namespace gpt {

Arena::Arena(std::size_t initial_bytes) {
  chunks_.emplace_back(round_up(std::max<std::size_t>(initial_bytes, kAlignment), kAlignment), kUninitialized);
}

void* Arena::allocate_bytes(std::size_t bytes) {
  bytes = round_up(std::max<std::size_t>(bytes, 1), kAlignment);
  const std::size_t current = chunks_.empty() ? 0 : chunks_.back().size();
  if (offset_ + bytes > current) {
    // Grow geometrically so that a first step with many tensors makes few chunks; when twice the
    // last chunk cannot be had, by just what this request needs.
    auto add_chunk = [&](std::size_t size) {
      try {
        chunks_.emplace_back(size, kUninitialized);
        return true;
      } catch (const AllocationFailure&) {
        return false;
      }
    };
    if (!add_chunk(std::max(bytes, current * 2)) && !add_chunk(bytes))
      throw AllocationFailure(static_cast<double>(bytes),
                              "the activation arena, which holds " + byte_size(static_cast<double>(used_bytes())) +
                                  " for this step already (it grows with batch_size, block_size, n_layer, n_embd "
                                  "and vocab_size)");
    used_before_current_ += offset_;
    offset_ = 0;
  }
  std::byte* p = chunks_.back().data() + offset_;
  offset_ += bytes;
  high_water_ = std::max(high_water_, used_before_current_ + offset_);
  return p;
}

float* Arena::allocate_zeroed_floats(std::size_t count) {
  float* p = allocate_floats(count);
  std::memset(p, 0, count * sizeof(float));
  return p;
}

void Arena::reset() {
  if (chunks_.size() > 1) {
    // The step's peak is exactly what one block needs: allocations are rounded the same way.
    chunks_.clear();
    // Merging only saves the next steps' growing: when the block cannot be had, the arena starts
    // empty and the step grows it again, failing there (with what it was for) if it must.
    try {
      chunks_.emplace_back(high_water_, kUninitialized);
    } catch (const AllocationFailure&) {
    }
  }
  offset_ = 0;
  used_before_current_ = 0;
}

std::size_t Arena::capacity_bytes() const {
  std::size_t total = 0;
  for (const auto& c : chunks_) total += c.size();
  return total;
}

}  // namespace gpt
