// Durable, atomic file replacement: write to a temporary file in the same folder, flush, fsync,
// rename over the target, fsync the folder. A crash at any instant leaves the old file or the new
// one, never a mix. Failures (disk full, permissions, file size limit) throw UserError (exit 1)
// naming the file; the old file is untouched and the temporary is removed.
#pragma once

#include <string>
#include <string_view>

namespace gpt {

void write_file_atomically(const std::string& path, std::string_view bytes);
// Reads a whole file; UserError (exit 1) naming it when it cannot be read.
std::string read_whole_file(const std::string& path);

}  // namespace gpt
