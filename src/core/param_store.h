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

// How a parameter starts: all zeros, all ones, or normal with mean 0 and this standard deviation.
struct Init {
  enum class Kind { zeros, ones, normal } kind = Kind::zeros;
  double stddev = 0.0;
  static Init zeros() { return {Kind::zeros, 0.0}; }
  static Init ones() { return {Kind::ones, 0.0}; }
  static Init normal(double stddev) { return {Kind::normal, stddev}; }
};

// A buffer in the parameter store's layout (optimizer state), by name.
struct NamedBuffer {
  std::string name;
  float* data;
};

// Floats [begin, end) of the store's layout (a process's shard of it).
struct StoreRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};

class ParamStore {
 public:
  struct Slot {
    std::string name;
    Shape shape;
    Init init;
    std::size_t offset = 0;  // in floats, 64-byte aligned
  };

  // Returns the slot index; the tensor is available from tensor(index) after finalize().
  int add(const std::string& name, Shape shape, Init init = Init::zeros());
  void finalize();

  int size() const { return static_cast<int>(slots_.size()); }
  const Slot& slot(int i) const { return slots_[i]; }
  Tensor tensor(int i);
  Tensor tensor(const std::string& name);
  int index_of(const std::string& name) const;  // -1 when absent
  const std::vector<Slot>& slots() const { return slots_; }

  // Every parameter from its Init, each drawing from its own stream keyed by (seed, name).
  void initialize(uint64_t seed);
  void zero_grad();

  float* data() { return data_.data(); }
  const float* data() const { return data_.data(); }
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
};

}  // namespace gpt
