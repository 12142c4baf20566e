// ParamStore: every trainable parameter in one aligned allocation, gradients in a second one with
// the same layout (and the optimizer's moments in buffers of the same layout), each parameter a
// named slot. Names are the checkpoint names (nanoGPT's state_dict keys).
// Usage: add() every parameter, then finalize() once; tensors are valid after finalize().
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/tensor.h"

namespace gpt {

class ParamStore {
 public:
  struct Slot {
    std::string name;
    Shape shape;
    std::size_t offset = 0;  // in floats, 64-byte aligned
  };

  // Returns the slot index; the tensor is available from tensor(index) after finalize().
  int add(const std::string& name, Shape shape);
  void finalize();

  int size() const { return static_cast<int>(slots_.size()); }
  const Slot& slot(int i) const { return slots_[i]; }
  Tensor tensor(int i);
  Tensor tensor(const std::string& name);
  int index_of(const std::string& name) const;  // -1 when absent
  const std::vector<Slot>& slots() const { return slots_; }

  // Gradients can be switched off (no gradient slots) for inference-only models.
  void set_grads_enabled(bool enabled) { grads_enabled_ = enabled; }
  void zero_grad();

  float* data() { return data_.data(); }
  float* grad() { return grad_.data(); }
  std::size_t padded_floats() const { return total_floats_; }
  int64_t parameter_count() const;

 private:
  std::vector<Slot> slots_;
  std::unordered_map<std::string, int> by_name_;
  AlignedBuffer<float> data_;
  AlignedBuffer<float> grad_;
  std::vector<GradSlot> grad_slots_;  // fixed slots into grad_, one per parameter
  std::size_t total_floats_ = 0;
  bool finalized_ = false;
  bool grads_enabled_ = true;
};

}  // namespace gpt
