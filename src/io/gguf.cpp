#include "io/gguf.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/atomic_file.h"
#include "core/check.h"
#include "kernels/bfloat16.h"

namespace gpt {

namespace {

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_u16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v & 0xff));
  out.push_back(static_cast<char>(v >> 8));
}
void put_f32(std::string& out, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  put_u32(out, bits);
}
// GGUF strings: a uint64 length, then the bytes (no terminator).
void put_string(std::string& out, std::string_view s) {
  put_u64(out, s.size());
  out.append(s);
}
void pad_to_alignment(std::string& out) {
  out.append((kGgufAlignment - out.size() % kGgufAlignment) % kGgufAlignment, '\0');
}

}  // namespace

const char* gguf_tensor_type_name(GgufTensorType type) {
  switch (type) {
    case GgufTensorType::f32:
      return "F32";
    case GgufTensorType::f16:
      return "F16";
    case GgufTensorType::q8_0:
      return "Q8_0";
    case GgufTensorType::bf16:
      return "BF16";
  }
  return "?";
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u : 0));
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to infinity
  if (magnitude < 0x38800000u) {
    // Below half's smallest normal (2^-14): a multiple of 2^-24; the scaling is exact and
    // nearbyint rounds to nearest even (the default mode). 0x400 is the smallest normal's code.
    float a;
    std::memcpy(&a, &magnitude, 4);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a * 16777216.0f)));
  }
  uint32_t h = (((magnitude >> 23) - 127 + 15) << 10) | ((magnitude & 0x7fffffu) >> 13);
  const uint32_t rest = magnitude & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right too
  return static_cast<uint16_t>(sign | h);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  float value;
  if (exponent == 0) {
    value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -value : value;
  }
  const uint32_t bits = exponent == 31 ? (sign | 0x7f800000u | (mantissa << 13))
                                       : (sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
  std::memcpy(&value, &bits, 4);
  return value;
}

std::string quantize_q8_0(const float* x, int64_t n) {
  GPT_CHECK(n % kQ8BlockSize == 0, "Q8_0 needs a multiple of 32 values, got " + std::to_string(n));
  std::string out;
  out.reserve(static_cast<std::size_t>(n / kQ8BlockSize * (2 + kQ8BlockSize)));
  for (int64_t b = 0; b < n; b += kQ8BlockSize) {
    float amax = 0;
    for (int64_t j = 0; j < kQ8BlockSize; ++j) amax = std::max(amax, std::fabs(x[b + j]));
    // As ggml's quantize_row_q8_0_ref: the scale is stored as fp16, but the values are divided by
    // the float one.
    const float d = amax / 127.0f;
    const float inverse = d != 0 ? 1.0f / d : 0.0f;
    put_u16(out, float_to_half(d));
    for (int64_t j = 0; j < kQ8BlockSize; ++j)
      out.push_back(static_cast<char>(static_cast<int8_t>(std::round(x[b + j] * inverse))));
  }
  return out;
}

std::vector<float> dequantize_q8_0(std::string_view blocks, int64_t n) {
  GPT_CHECK(n % kQ8BlockSize == 0 && static_cast<int64_t>(blocks.size()) == n / kQ8BlockSize * (2 + kQ8BlockSize),
            "Q8_0 blocks do not hold " + std::to_string(n) + " values");
  std::vector<float> out(static_cast<std::size_t>(n));
  for (int64_t b = 0; b < n / kQ8BlockSize; ++b) {
    const auto* block = reinterpret_cast<const unsigned char*>(blocks.data()) + b * (2 + kQ8BlockSize);
    const float d = half_to_float(static_cast<uint16_t>(block[0] | (block[1] << 8)));
    for (int64_t j = 0; j < kQ8BlockSize; ++j)
      out[b * kQ8BlockSize + j] = d * static_cast<float>(static_cast<int8_t>(block[2 + j]));
  }
  return out;
}

void GgufFile::add_uint32(const std::string& key, uint32_t value) {
  put_string(metadata_, key);
  put_u32(metadata_, static_cast<uint32_t>(GgufValueType::uint32));
  put_u32(metadata_, value);
  ++metadata_count_;
}

void GgufFile::add_float32(const std::string& key, float value) {
  put_string(metadata_, key);
  put_u32(metadata_, static_cast<uint32_t>(GgufValueType::float32));
  put_f32(metadata_, value);
  ++metadata_count_;
}

void GgufFile::add_bool(const std::string& key, bool value) {
  put_string(metadata_, key);
  put_u32(metadata_, static_cast<uint32_t>(GgufValueType::boolean));
  metadata_.push_back(value ? 1 : 0);
  ++metadata_count_;
}

void GgufFile::add_string(const std::string& key, std::string_view value) {
  put_string(metadata_, key);
  put_u32(metadata_, static_cast<uint32_t>(GgufValueType::string));
  put_string(metadata_, value);
  ++metadata_count_;
}

void GgufFile::add_string_array(const std::string& key, const std::vector<std::string>& values) {
  put_string(metadata_, key);
  put_u32(metadata_, static_cast<uint32_t>(GgufValueType::array));
  put_u32(metadata_, static_cast<uint32_t>(GgufValueType::string));
  put_u64(metadata_, values.size());
  for (const std::string& v : values) put_string(metadata_, v);
  ++metadata_count_;
}

void GgufFile::add_int32_array(const std::string& key, const std::vector<int32_t>& values) {
  put_string(metadata_, key);
  put_u32(metadata_, static_cast<uint32_t>(GgufValueType::array));
  put_u32(metadata_, static_cast<uint32_t>(GgufValueType::int32));
  put_u64(metadata_, values.size());
  for (int32_t v : values) put_u32(metadata_, static_cast<uint32_t>(v));
  ++metadata_count_;
}

void GgufFile::add_tensor(const std::string& name, const std::vector<int64_t>& shape, const float* values,
                          GgufTensorType type) {
  GPT_CHECK(!shape.empty(), "GGUF tensor " + name + " has no dimensions");
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  TensorEntry entry{name, shape, type, {}};
  switch (type) {
    case GgufTensorType::f32:
      entry.data.assign(reinterpret_cast<const char*>(values), static_cast<std::size_t>(n) * 4);
      break;
    case GgufTensorType::f16:
      for (int64_t i = 0; i < n; ++i) put_u16(entry.data, float_to_half(values[i]));
      break;
    case GgufTensorType::bf16:
      for (int64_t i = 0; i < n; ++i) put_u16(entry.data, round_to_bfloat16(values[i]));
      break;
    case GgufTensorType::q8_0:
      GPT_CHECK(shape.back() % kQ8BlockSize == 0, "Q8_0 tensor " + name + " has a row length not divisible by 32");
      entry.data = quantize_q8_0(values, n);
      break;
  }
  tensors_.push_back(std::move(entry));
}

std::string GgufFile::bytes() const {
  std::string out = "GGUF";
  put_u32(out, kGgufVersion);
  put_u64(out, tensors_.size());
  put_u64(out, static_cast<uint64_t>(metadata_count_));
  out += metadata_;
  uint64_t offset = 0;  // from the start of the data section, each tensor aligned
  for (const TensorEntry& t : tensors_) {
    put_string(out, t.name);
    put_u32(out, static_cast<uint32_t>(t.shape.size()));
    for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) put_u64(out, static_cast<uint64_t>(*d));
    put_u32(out, static_cast<uint32_t>(t.type));
    put_u64(out, offset);
    offset += (t.data.size() + kGgufAlignment - 1) / kGgufAlignment * kGgufAlignment;
  }
  pad_to_alignment(out);
  for (const TensorEntry& t : tensors_) {
    out += t.data;
    pad_to_alignment(out);
  }
  return out;
}

void GgufFile::write(const std::string& path) const { write_file_atomically(path, bytes()); }

}  // namespace gpt
