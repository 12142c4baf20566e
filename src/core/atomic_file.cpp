#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/check.h"

namespace gpt {

namespace {

void sync_folder(const std::string& path) {
  const std::string folder = std::filesystem::path(path).parent_path().string();
  const int fd = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;  // best effort: the rename itself is already atomic
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path)
    : path_(std::move(path)), temporary_(path_ + ".tmp" + std::to_string(::getpid())) {
  fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int error = errno;
    throw UserError("cannot write " + path_ + ": creating the temporary file: " + std::strerror(error),
                    ExitCode::runtime);
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
}

void AtomicFileWriter::fail(const char* what, int error) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temporary_.c_str());
  temporary_.clear();
  throw UserError("cannot write " + path_ + ": " + what + ": " + std::strerror(error), ExitCode::runtime);
}

void AtomicFileWriter::write(const void* data, std::size_t bytes) {
  GPT_CHECK(fd_ >= 0, "write after commit or failure");
  const auto* p = static_cast<const char*>(data);
  std::size_t written = 0;
  while (written < bytes) {
    const ssize_t n = ::write(fd_, p + written, bytes - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("writing", n < 0 ? errno : ENOSPC);
    written += static_cast<std::size_t>(n);
  }
}

void AtomicFileWriter::commit() {
  GPT_CHECK(fd_ >= 0, "commit twice or after failure");
  if (::fsync(fd_) != 0) fail("flushing to disk", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("closing", errno);
  if (::rename(temporary_.c_str(), path_.c_str()) != 0) fail("renaming the temporary file into place", errno);
  temporary_.clear();
  sync_folder(path_);
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  AtomicFileWriter file(path);
  file.write(bytes);
  file.commit();
}

std::string read_whole_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UserError(path + ": is a directory, expected a file", ExitCode::runtime);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open for reading: " + std::strerror(errno), ExitCode::runtime);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw UserError(path + ": read error", ExitCode::runtime);
  return buffer.str();
}

}  // namespace gpt
