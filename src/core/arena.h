// Arena: bump allocator for per-step memory (activations, their gradients, saved tensors for
// backward, backward closures). reset() frees everything at once. After the first step the arena
// has grown to the step's high-water mark and later steps allocate nothing from the system:
// when a step spilled into extra chunks, reset() merges them into one block of the peak size.
#pragma once

#include <cstddef>
#include <vector>

#include "core/aligned_buffer.h"

namespace gpt {

class Arena {
 public:
  explicit Arena(std::size_t initial_bytes = 1 << 20);

  // Uninitialised, 64-byte aligned memory, valid until reset().
  void* allocate_bytes(std::size_t bytes);
  float* allocate_floats(std::size_t count) { return static_cast<float*>(allocate_bytes(count * sizeof(float))); }
  float* allocate_zeroed_floats(std::size_t count);

  void reset();
  std::size_t used_bytes() const { return used_before_current_ + offset_; }
  std::size_t high_water_bytes() const { return high_water_; }
  std::size_t capacity_bytes() const;

 private:
  std::vector<AlignedBuffer<std::byte>> chunks_;
  std::size_t offset_ = 0;               // within chunks_.back() (0 while there is none)
  std::size_t used_before_current_ = 0;  // bytes handed out from earlier chunks this step
  std::size_t high_water_ = 0;
};

}  // namespace gpt
