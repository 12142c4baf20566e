#include "core/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
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

constexpr std::string_view kTemporaryMark = ".tmp";  // then the writer's pid

// The pid in a temporary file's name, or 0 when the name is not one of ours.
pid_t writer_of(std::string_view name) {
  const std::size_t mark = name.rfind(kTemporaryMark);
  if (mark == std::string_view::npos || mark == 0) return 0;
  const std::string_view digits = name.substr(mark + kTemporaryMark.size());
  if (digits.empty() || digits.size() > 9 || digits[0] == '0' ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return 0;
  return static_cast<pid_t>(std::stol(std::string(digits)));
}

// EPERM: it runs, as another user.
bool process_runs(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path)
    : path_(std::move(path)), temporary_(path_ + std::string(kTemporaryMark) + std::to_string(::getpid())) {
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

int remove_stale_temporaries(const std::string& folder) {
  namespace fs = std::filesystem;
  int removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const pid_t writer = writer_of(it->path().filename().string());
    std::error_code ignored;
    if (writer > 0 && writer != ::getpid() && !process_runs(writer) && it->is_regular_file(ignored) &&
        fs::remove(it->path(), ignored))
      ++removed;
  }
  return removed;
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
