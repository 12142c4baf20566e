// A 64-byte aligned, owning buffer (bulk storage; it allocates through core/memory.h, so a failure
// is an AllocationFailure naming the size), zero-initialised unless constructed with
// kUninitialized (the arena: pages it never touches then never count towards the process's
// resident memory). Move-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/memory.h"

namespace gpt {

constexpr std::size_t kAlignment = 64;

inline std::size_t round_up(std::size_t n, std::size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

struct Uninitialized {};
inline constexpr Uninitialized kUninitialized{};

template <typename T>
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t count) : AlignedBuffer(count, kUninitialized) {
    if (data_) std::memset(static_cast<void*>(data_), 0, count * sizeof(T));
  }
  AlignedBuffer(std::size_t count, Uninitialized) : count_(count) {
    if (count == 0) return;
    if (count > SIZE_MAX / sizeof(T)) throw AllocationFailure(static_cast<double>(count) * sizeof(T));
    data_ = static_cast<T*>(allocate_aligned(count * sizeof(T)));
  }
  AlignedBuffer(AlignedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    if (this != &other) {
      std::free(data_);
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { std::free(data_); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace gpt
