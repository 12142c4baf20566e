// Shape of a contiguous row-major float32 tensor, rank 0 to 4.
// Rank 0 is a scalar (one element). Dimensions are int64 so that products never overflow.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/check.h"

namespace gpt {

struct Shape {
  static constexpr int kMaxRank = 4;
  int64_t dims[kMaxRank] = {1, 1, 1, 1};
  int rank = 0;

  Shape() = default;
  Shape(std::initializer_list<int64_t> list) {
    GPT_CHECK(list.size() <= kMaxRank, "rank above 4");
    for (int64_t d : list) {
      GPT_CHECK(d >= 0, "negative dimension");
      dims[rank++] = d;
    }
  }

  int64_t operator[](int axis) const {
    if (axis < 0) axis += rank;
    GPT_CHECK(axis >= 0 && axis < rank, "axis out of range");
    return dims[axis];
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[i];
    return n;
  }
  int64_t last() const { return rank == 0 ? 1 : dims[rank - 1]; }
  // Product of all but the last dimension: the number of rows when viewed as a matrix.
  int64_t rows() const { return rank == 0 ? 1 : numel() / dims[rank - 1]; }

  bool operator==(const Shape& other) const {
    if (rank != other.rank) return false;
    for (int i = 0; i < rank; ++i)
      if (dims[i] != other.dims[i]) return false;
    return true;
  }
  std::string str() const {
    std::string s = "(";
    for (int i = 0; i < rank; ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + ")";
  }
};

}  // namespace gpt
