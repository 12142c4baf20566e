#include "data/text_sources.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/check.h"

namespace gpt {

namespace fs = std::filesystem;

SourceFile stat_source_file(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) throw UserError(path + ": cannot read: " + std::strerror(errno));
  SourceFile file;
  file.path = path;
  file.size = static_cast<uint64_t>(info.st_size);
  file.mtime_ns = static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec;
  return file;
}

namespace {

bool is_hidden(const fs::path& path) {
  const std::string name = path.filename().string();
  return !name.empty() && name[0] == '.';
}

}  // namespace

std::vector<SourceFile> list_source_files(const std::string& path, const std::string& what) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) throw UserError(what + ": " + path + " does not exist");
  if (!fs::is_directory(status)) {
    if (!fs::is_regular_file(status)) throw UserError(what + ": " + path + " is neither a file nor a folder");
    return {stat_source_file(path)};
  }
  std::vector<std::string> paths;
  fs::recursive_directory_iterator it(path, fs::directory_options::none, ec), end;
  if (ec) throw UserError(what + ": cannot list " + path + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) throw UserError(what + ": cannot list " + path + ": " + ec.message());
    if (is_hidden(it->path())) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec)) paths.push_back(it->path().string());
  }
  if (paths.empty()) throw UserError(what + ": the folder " + path + " holds no files (hidden ones are skipped)");
  std::sort(paths.begin(), paths.end());
  std::vector<SourceFile> files;
  files.reserve(paths.size());
  for (const std::string& p : paths) files.push_back(stat_source_file(p));
  return files;
}

}  // namespace gpt
