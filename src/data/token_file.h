// Token ids as stored in a prepared dataset's train.bin / val.bin: little-endian unsigned
// integers of the smallest width that holds the vocabulary, read through a read-only memory map
// so that memory does not grow with the corpus (pages come from the page cache on demand).
#pragma once

#include <cstdint>
#include <memory>
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
  // Ids read from a file (`origin`, which must outlive the view) are checked against vocab_size
  // as they are copied out: a file changed after preparation is an input error, found in the
  // windows actually read, so opening stays independent of the corpus's size.
  TokenView(const void* data, TokenType type, int64_t size, int64_t vocab_size, const std::string* origin)
      : data_(data), type_(type), size_(size), vocab_size_(vocab_size), origin_(origin) {}
  explicit TokenView(const std::vector<int32_t>& ids)  // our own ids, >= 0: read as uint32, unchecked
      : data_(ids.data()), type_(TokenType::u32), size_(static_cast<int64_t>(ids.size())) {}

  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  TokenType type() const { return type_; }
  int32_t operator[](int64_t i) const;
  // out[0 .. count) = ids [begin, begin + count). UserError naming the file, the offset, the id
  // and the vocabulary size for an id >= vocab_size.
  void copy(int64_t begin, int64_t count, int32_t* out) const;
  std::vector<int32_t> to_vector(int64_t begin, int64_t count) const;

 private:
  void check_ids(int64_t begin, int64_t count, const int32_t* ids) const;

  const void* data_ = nullptr;
  TokenType type_ = TokenType::u8;
  int64_t size_ = 0;
  int64_t vocab_size_ = 0;  // 0: unchecked
  const std::string* origin_ = nullptr;
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
  // On the heap, so that views may point at it while the MappedFile moves.
  const std::string* path() const { return path_.get(); }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
  std::unique_ptr<const std::string> path_;
};

}  // namespace gpt
