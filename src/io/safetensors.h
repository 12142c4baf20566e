// The safetensors format (what Python's `safetensors` library reads and writes):
//   8 bytes little-endian header length N, N bytes of JSON header, then the raw tensor bytes.
// The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets
// relative to the byte after the header) and may hold "__metadata__", a map of strings.
// We write and read F32 and BF16 (bfloat16: the high 16 bits of a float32; read back widened to
// float32, exactly). The reader treats the file as untrusted: every malformation is a UserError
// (exit 1) naming the file and the problem, never undefined behaviour.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/shape.h"

namespace gpt {

// Written as a stream: the header first, then each tensor's bytes as the file reaches it, so a
// file never exists whole in memory (a checkpoint's optimizer state is twice the weights).
class SafetensorsWriter {
 public:
  // Asked for a tensor's floats when the file reaches it (once, in the order tensors were added):
  // a tensor gathered from other processes need not exist before.
  using Source = std::function<const float*()>;
  // Receives the file's bytes in order.
  using Sink = std::function<void(std::string_view bytes)>;

  // F32: the floats as they are (`data` must outlive the writing).
  void add(const std::string& name, const Shape& shape, const float* data);
  void add(const std::string& name, const Shape& shape, Source source);
  // BF16: each float rounded to the nearest bfloat16 (ties to even, subnormals to signed zero),
  // as dtype "bfloat16" rounds the inputs of matrix products.
  void add_bfloat16(const std::string& name, const Shape& shape, const float* data);
  void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }

  void write(const Sink& sink) const;
  // The file at `path`, atomically (core/atomic_file.h).
  void write_file(const std::string& path) const;
  std::string serialize() const;

 private:
  struct Item {
    std::string name;
    Shape shape;
    Source source;
    bool bfloat16 = false;
  };
  std::string header() const;
  std::vector<Item> items_;
  std::map<std::string, std::string> metadata_;
};

class SafetensorsReader {
 public:
  struct Entry {
    std::vector<int64_t> shape;
    std::size_t begin = 0, end = 0;  // byte offsets into the data section
    bool bfloat16 = false;           // BF16 rather than F32
  };

  // Parses and validates `bytes` (the whole file); `source` names the file in messages.
  SafetensorsReader(std::string bytes, std::string source);
  static SafetensorsReader open(const std::string& path);

  const std::map<std::string, Entry>& entries() const { return entries_; }
  // A metadata string; UserError naming the key when absent.
  const std::string& metadata(const std::string& key) const;
  bool has_metadata(const std::string& key) const { return metadata_.count(key) != 0; }

  // Copies tensor `name` into dst (as float32) after checking that its shape is `expected`.
  void read_into(const std::string& name, const Shape& expected, float* dst) const;

 private:
  std::string bytes_;
  std::string source_;
  std::size_t data_start_ = 0;
  std::map<std::string, Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace gpt
