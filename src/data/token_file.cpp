#include "data/token_file.h"

#include <fcntl.h>
#include <sys/mman.h>
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

}  // namespace

int32_t TokenView::operator[](int64_t i) const {
  int32_t id = 0;
  copy(i, 1, &id);
  return id;
}

void TokenView::copy(int64_t begin, int64_t count, int32_t* out) const {
  GPT_CHECK(begin >= 0 && count >= 0 && begin + count <= size_, "token range out of bounds");
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

MappedFile::MappedFile(const std::string& path) : path_(std::make_unique<const std::string>(path)) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw UserError(path + ": cannot open for reading: " + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    throw UserError(path + ": cannot read its size: " + std::strerror(error));
  }
  size_ = static_cast<std::size_t>(info.st_size);
  if (size_ > 0) {
    data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data_ == MAP_FAILED) {
      const int error = errno;
      data_ = nullptr;
      ::close(fd);
      throw UserError(path + ": cannot map into memory: " + std::strerror(error), ExitCode::runtime);
    }
  }
  if (data_) ::madvise(data_, size_, MADV_RANDOM);  // batches are random windows: no readahead
  ::close(fd);                                      // the mapping keeps the file
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)), path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

}  // namespace gpt
