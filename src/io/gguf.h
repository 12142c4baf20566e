// A small GGUF v3 writer (the file format of llama.cpp and ggml): a header, typed key/value
// metadata, tensor descriptions, then the tensors' bytes, each aligned to general.alignment (32).
// It writes what gpt's exports need (scalars, strings, arrays of strings and integers; F32, F16,
// BF16 and Q8_0 tensors) and nothing else; it does not read GGUF. Little-endian, as ggml.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpt {

// ggml's tensor type ids (ggml.h, enum ggml_type) for the types we write.
enum class GgufTensorType : uint32_t { f32 = 0, f16 = 1, q8_0 = 8, bf16 = 30 };
const char* gguf_tensor_type_name(GgufTensorType type);  // "F32", "F16", "Q8_0", "BF16"

// GGUF's metadata value types (gguf.h, enum gguf_type) for the ones we write.
enum class GgufValueType : uint32_t { uint32 = 4, int32 = 5, float32 = 6, boolean = 7, string = 8, array = 9 };

inline constexpr uint32_t kGgufVersion = 3;
inline constexpr uint32_t kGgufAlignment = 32;
inline constexpr int64_t kQ8BlockSize = 32;  // values per Q8_0 block: one fp16 scale, 32 int8

// IEEE half precision, round to nearest even (overflow gives infinity), and back.
uint16_t float_to_half(float x);
float half_to_float(uint16_t h);

// Q8_0 as ggml's reference quantiser: per block of 32 values, d = max|x| / 127 stored as fp16,
// q = round(x / d) (halves away from zero). n must be a multiple of 32. 34 bytes per block.
std::string quantize_q8_0(const float* x, int64_t n);
std::vector<float> dequantize_q8_0(std::string_view blocks, int64_t n);

class GgufFile {
 public:
  void add_uint32(const std::string& key, uint32_t value);
  void add_float32(const std::string& key, float value);
  void add_bool(const std::string& key, bool value);
  void add_string(const std::string& key, std::string_view value);
  void add_string_array(const std::string& key, const std::vector<std::string>& values);
  void add_int32_array(const std::string& key, const std::vector<int32_t>& values);

  // A tensor of `values` (row-major, PyTorch's shape, e.g. a Linear weight [out, in]) stored as
  // `type`. GGUF lists dimensions innermost first, so [out, in] is written as ne = {in, out}.
  // Q8_0 needs a row length divisible by 32.
  void add_tensor(const std::string& name, const std::vector<int64_t>& shape, const float* values, GgufTensorType type);

  int64_t tensor_count() const { return static_cast<int64_t>(tensors_.size()); }
  int64_t metadata_count() const { return metadata_count_; }
  // The whole file's bytes.
  std::string bytes() const;
  // Writes bytes() to `path` atomically (core/atomic_file.h).
  void write(const std::string& path) const;

 private:
  struct TensorEntry {
    std::string name;
    std::vector<int64_t> shape;  // PyTorch order
    GgufTensorType type;
    std::string data;
  };
  std::string metadata_;  // the serialized key/value pairs
  int64_t metadata_count_ = 0;
  std::vector<TensorEntry> tensors_;
};

}  // namespace gpt
