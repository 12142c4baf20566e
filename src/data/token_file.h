// Token ids as stored in a prepared dataset's train.bin / val.bin: little-endian unsigned
// integers of the smallest width that holds the vocabulary, read a window at a time (pread) so
// that memory does not grow with the corpus. A memory map would not do: every window a batch
// touched would stay mapped, and the process's resident memory would grow with the windows read
// (up to the whole corpus over a long run), although the kernel could reclaim those pages.
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

class TokenFile;

// A read-only sequence of token ids of one storage type, in memory or in a file; it owns nothing.
class TokenView {
 public:
  TokenView() = default;
  // Ids read from a file (which must outlive the view, or the view would read whatever file
  // reuses its descriptor; it may move) are checked against
  // vocab_size as they are copied out: a file changed after preparation is an input error, found
  // in the windows actually read, so opening stays independent of the corpus's size.
  TokenView(const TokenFile& file, TokenType type, int64_t size, int64_t vocab_size);
  explicit TokenView(const std::vector<int32_t>& ids)  // our own ids, >= 0: read as uint32, unchecked
      : data_(ids.data()), type_(TokenType::u32), size_(static_cast<int64_t>(ids.size())) {}

  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  TokenType type() const { return type_; }
  int32_t operator[](int64_t i) const;
  // out[0 .. count) = ids [begin, begin + count). UserError naming the file, the offset, the id
  // and the vocabulary size for an id >= vocab_size; naming the file when it cannot be read.
  void copy(int64_t begin, int64_t count, int32_t* out) const;
  std::vector<int32_t> to_vector(int64_t begin, int64_t count) const;

 private:
  void check_ids(int64_t begin, int64_t count, const int32_t* ids) const;

  const void* data_ = nullptr;  // ids in memory, or
  int fd_ = -1;                 // the file that holds them
  TokenType type_ = TokenType::u8;
  int64_t size_ = 0;
  int64_t vocab_size_ = 0;  // 0: unchecked
  const std::string* origin_ = nullptr;
};

// A whole file open for reading windows of it. UserError (exit 2) naming the file when it cannot
// be opened.
class TokenFile {
 public:
  TokenFile() = default;
  explicit TokenFile(const std::string& path);
  ~TokenFile();
  TokenFile(TokenFile&& other) noexcept;
  TokenFile& operator=(TokenFile&& other) noexcept;
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  std::size_t size() const { return size_; }
  int descriptor() const { return fd_; }
  // On the heap, so that views may point at it while the TokenFile moves.
  const std::string* path() const { return path_.get(); }

 private:
  int fd_ = -1;
  std::size_t size_ = 0;
  std::unique_ptr<const std::string> path_;
};

}  // namespace gpt
