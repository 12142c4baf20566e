// The files a data path names: a file, or every regular file under a folder (recursively, in
// sorted path order, hidden names such as .git skipped), with what identifies their content for
// a cache (size, modification time, content hash).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpt {

struct SourceFile {
  std::string path;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  std::string hash;      // XXH64 of the content, once read
  bool skipped = false;  // not valid UTF-8, left out (skip_invalid_files)
};

// UserError naming `what` (the key) when the path does not exist or a folder holds no file.
std::vector<SourceFile> list_source_files(const std::string& path, const std::string& what);

// The file's size and modification time as they are now (UserError when it is gone).
SourceFile stat_source_file(const std::string& path);

// Joined between the files of a folder (and so part of a folder's vocabulary).
inline constexpr char kFileSeparator = '\n';

}  // namespace gpt
