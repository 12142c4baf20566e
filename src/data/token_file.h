// Token ids as stored in a prepared dataset's train.bin / val.bin: little-endian unsigned
// integers of the smallest width that holds the vocabulary, read through a read-only memory map
// so that memory does not grow with the corpus (pages come from the page cache on demand).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpt {

enum class TokenType : uint8_t { u8, u16, u32 };
const char* to_string(TokenType type);  // "uint8", "uint16", "uint32"
TokenType parse_token_type(const std::string& text, const std::string& what);
int token_bytes(TokenType type);
TokenType smallest_token_type(int64_t vocab_size);

// A read-only sequence of token ids of one storage type; it owns nothing.
class TokenView {
 public:
  TokenView() = default;
  TokenView(const void* data, TokenType type, int64_t size) : data_(data), type_(type), size_(size) {}
  explicit TokenView(const std::vector<int32_t>& ids)  // ids are >= 0: read as uint32
      : TokenView(ids.data(), TokenType::u32, static_cast<int64_t>(ids.size())) {}

  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  TokenType type() const { return type_; }
  int32_t operator[](int64_t i) const;
  // out[0 .. count) = ids [begin, begin + count).
  void copy(int64_t begin, int64_t count, int32_t* out) const;
  std::vector<int32_t> to_vector(int64_t begin, int64_t count) const;
  TokenView slice(int64_t begin, int64_t count) const;

 private:
  const void* data_ = nullptr;
  TokenType type_ = TokenType::u8;
  int64_t size_ = 0;
};

// A whole file mapped read-only. UserError (exit 2) naming the file when it cannot be opened.
class MappedFile {
 public:
  MappedFile() = default;
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const void* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace gpt
