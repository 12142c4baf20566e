// copy_values: n values from src to dst, which may overlap (an in-place gather) and may be null
// when n is 0 (an empty shard's buffer), where memcpy and memmove may not be called.
#pragma once

#include <cstdint>
#include <cstring>

namespace gpt {

template <class T>
void copy_values(T* dst, const T* src, int64_t n) {
  if (n > 0) std::memmove(dst, src, sizeof(T) * static_cast<std::size_t>(n));
}

}  // namespace gpt
