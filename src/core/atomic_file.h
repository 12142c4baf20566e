// Durable, atomic file replacement: write to a temporary file in the same folder, flush, fsync,
// rename over the target, fsync the folder. A crash at any instant leaves the old file or the new
// one, never a mix. Failures (disk full, permissions, file size limit) throw UserError (exit 1)
// naming the file; the old file is untouched and the temporary is removed.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpt {

// A file written in pieces that appears under its name, complete, only at commit(); destroyed
// without commit() (an error, an interrupt), it leaves no trace.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, std::size_t bytes);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  void commit();
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void fail(const char* what, int error);
  std::string path_, temporary_;
  int fd_ = -1;
};

void write_file_atomically(const std::string& path, std::string_view bytes);
// Removes from `folder` the temporary files (`<file>.tmp<pid>`) of processes that no longer run:
// a second Ctrl-C or a kill ends a process mid-write and leaves them. A running process's are kept
// (it may be writing them), and so is anything that cannot be read or removed. The pid is this
// machine's: a folder shared with another machine's running writer is not supported. Returns
// how many were removed.
int remove_stale_temporaries(const std::string& folder);
// Reads a whole file; UserError (exit 1) naming it when it cannot be read.
std::string read_whole_file(const std::string& path);

}  // namespace gpt
