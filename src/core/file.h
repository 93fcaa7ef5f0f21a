// File helpers: read a whole file, write atomically (temp file + fsync + rename), path utils.
// Errors are IoError naming the path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace trinity::file {

std::string read_all(const std::string& path);
bool exists(const std::string& path);
bool is_dir(const std::string& path);
void make_dirs(const std::string& path);
// Writes bytes to path.tmp.<pid>, fsyncs, then renames over path: a crash never leaves half a file.
void write_atomic(const std::string& path, std::string_view bytes);
// Removes the leftovers of writes killed midway under `dir` (at most `max_depth` levels down):
// files and directories named "<name>.tmp.<pid>" (write_atomic, checkpoint saves) whose process is
// gone. Returns how many it removed; a live writer's temporaries are kept.
int64_t remove_stale_temporaries(const std::string& dir, int max_depth = 3);
// Joins a directory and a file name with exactly one '/'.
std::string join(const std::string& dir, const std::string& name);

}  // namespace trinity::file
