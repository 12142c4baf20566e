#include "io/atomic_file.h"

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

[[noreturn]] void fail(const std::string& path, const char* what, int error) {
  throw UserError("cannot write " + path + ": " + what + ": " + std::strerror(error), 1);
}

void sync_folder(const std::string& path) {
  const std::string folder = std::filesystem::path(path).parent_path().string();
  const int fd = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;  // best effort: the rename itself is already atomic
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view bytes) {
  const std::string temporary = path + ".tmp" + std::to_string(::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, "creating the temporary file", errno);
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : ENOSPC;
      ::close(fd);
      ::unlink(temporary.c_str());
      fail(path, "writing", error);
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int error = errno;
    ::close(fd);
    ::unlink(temporary.c_str());
    fail(path, "flushing to disk", error);
  }
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    fail(path, "closing", error);
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    fail(path, "renaming the temporary file into place", error);
  }
  sync_folder(path);
}

std::string read_whole_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UserError(path + ": is a directory, expected a file", 1);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open for reading: " + std::strerror(errno), 1);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw UserError(path + ": read error", 1);
  return buffer.str();
}

}  // namespace gpt
