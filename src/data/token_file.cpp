#include "data/token_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/check.h"

namespace gpt {

const char* to_string(TokenType type) {
  switch (type) {
    case TokenType::u8:
      return "uint8";
    case TokenType::u16:
      return "uint16";
    case TokenType::u32:
      return "uint32";
  }
  return "?";
}

TokenType parse_token_type(const std::string& text, const std::string& what) {
  for (TokenType type : {TokenType::u8, TokenType::u16, TokenType::u32})
    if (text == to_string(type)) return type;
  throw UserError(what + ": unknown token type \"" + text + "\" (expected uint8, uint16 or uint32)");
}

int token_bytes(TokenType type) { return type == TokenType::u8 ? 1 : type == TokenType::u16 ? 2 : 4; }

TokenType smallest_token_type(int64_t vocab_size) {
  if (vocab_size <= 256) return TokenType::u8;
  if (vocab_size <= 65536) return TokenType::u16;
  return TokenType::u32;
}

namespace {

template <class T>
void widen(const void* data, int64_t begin, int64_t count, int32_t* out) {
  const T* source = static_cast<const T*>(data) + begin;
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<int32_t>(source[i]);
}

// out holds `count` ids of T packed at its start; widened from the last, each id is read before
// the int32 written over its bytes (4 i >= i sizeof(T)).
template <class T>
void widen_in_place(int64_t count, int32_t* out) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(out);
  for (int64_t i = count - 1; i >= 0; --i) {
    T id;
    std::memcpy(&id, bytes + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
    out[i] = static_cast<int32_t>(id);
  }
}

// bytes [offset, offset + count) of the file into out, whole; UserError naming it otherwise.
void read_window(int fd, const std::string& path, int64_t offset, int64_t count, void* out) {
  auto* at = static_cast<char*>(out);
  while (count > 0) {
    const ssize_t n = ::pread(fd, at, static_cast<std::size_t>(count), offset);
    const int error = errno;
    if (n < 0 && error == EINTR) continue;
    if (n <= 0)
      throw UserError(path + ": cannot read " + std::to_string(count) + " bytes at offset " + std::to_string(offset) +
                          ": " + (n < 0 ? std::strerror(error) : "the file is shorter than when it was opened"),
                      ExitCode::runtime);
    at += n;
    offset += n;
    count -= n;
  }
}

}  // namespace

TokenView::TokenView(const TokenFile& file, TokenType type, int64_t size, int64_t vocab_size)
    : fd_(file.descriptor()), type_(type), size_(size), vocab_size_(vocab_size), origin_(file.path()) {}

int32_t TokenView::operator[](int64_t i) const {
  int32_t id = 0;
  copy(i, 1, &id);
  return id;
}

void TokenView::copy(int64_t begin, int64_t count, int32_t* out) const {
  GPT_CHECK(begin >= 0 && count >= 0 && begin + count <= size_, "token range out of bounds");
  if (fd_ >= 0) {
    const int width = token_bytes(type_);
    read_window(fd_, *origin_, begin * width, count * width, out);
    if (type_ == TokenType::u8) widen_in_place<uint8_t>(count, out);
    if (type_ == TokenType::u16) widen_in_place<uint16_t>(count, out);
  } else {
    switch (type_) {
      case TokenType::u8:
        widen<uint8_t>(data_, begin, count, out);
        break;
      case TokenType::u16:
        widen<uint16_t>(data_, begin, count, out);
        break;
      case TokenType::u32:
        widen<uint32_t>(data_, begin, count, out);
        break;
    }
  }
  if (vocab_size_ > 0) check_ids(begin, count, out);
}

void TokenView::check_ids(int64_t begin, int64_t count, const int32_t* ids) const {
  // A branch-free maximum (it vectorises; uint32 ids above 2^31 wrapped negative, so compare
  // unsigned); the slow search runs only on the way to the error.
  uint32_t largest = 0;
  for (int64_t i = 0; i < count; ++i) largest = std::max(largest, static_cast<uint32_t>(ids[i]));
  if (largest < static_cast<uint64_t>(vocab_size_)) return;
  int64_t i = 0;
  while (static_cast<uint32_t>(ids[i]) < static_cast<uint64_t>(vocab_size_)) ++i;
  const int64_t token = begin + i;
  throw UserError(*origin_ + ": byte offset " + std::to_string(token * token_bytes(type_)) + " (token " +
                  std::to_string(token) + ") holds id " + std::to_string(static_cast<uint32_t>(ids[i])) +
                  ", outside the vocabulary [0, " + std::to_string(vocab_size_) +
                  "); the file was changed after it was prepared: prepare the dataset again");
}

std::vector<int32_t> TokenView::to_vector(int64_t begin, int64_t count) const {
  std::vector<int32_t> ids(static_cast<std::size_t>(count));
  copy(begin, count, ids.data());
  return ids;
}

TokenFile::TokenFile(const std::string& path) : path_(std::make_unique<const std::string>(path)) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw UserError(path + ": cannot open for reading: " + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd_, &info) != 0) {
    const int error = errno;
    ::close(fd_);
    throw UserError(path + ": cannot read its size: " + std::strerror(error));
  }
  size_ = static_cast<std::size_t>(info.st_size);
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_RANDOM);  // batches are random windows: no readahead
}

TokenFile::~TokenFile() {
  if (fd_ >= 0) ::close(fd_);
}

TokenFile::TokenFile(TokenFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(std::exchange(other.size_, 0)), path_(std::move(other.path_)) {}

TokenFile& TokenFile::operator=(TokenFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

}  // namespace gpt
