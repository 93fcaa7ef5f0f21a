// File helpers (see file.h).
#include "core/file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/error.h"

namespace trinity::file {

std::string read_all(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw IoError("file", strcat("cannot open '", path, "': ", std::strerror(errno)));
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const bool err = std::ferror(f);
  std::fclose(f);
  if (err) throw IoError("file", strcat("error reading '", path, "'"));
  return out;
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool is_dir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void make_dirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) throw IoError("file", strcat("cannot create directory '", path, "': ", ec.message()));
}

void write_atomic(const std::string& path, std::string_view bytes) {
  const std::string tmp = strcat(path, ".tmp.", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError("file", strcat("cannot create '", tmp, "': ", std::strerror(errno)));
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw IoError("file", strcat("cannot write '", tmp, "': ", std::strerror(e)));
    }
    off += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw IoError("file", strcat("cannot flush '", tmp, "'"));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    throw IoError("file", strcat("cannot rename '", tmp, "' to '", path, "': ", std::strerror(e)));
  }
}

namespace {

// The pid of a "<name>.tmp.<pid>" path component, or -1.
long tmp_owner(const std::string& name) {
  const size_t p = name.rfind(".tmp.");
  if (p == std::string::npos || p == 0 || p + 5 >= name.size()) return -1;
  long pid = 0;
  for (size_t i = p + 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || pid > 1'000'000'000) return -1;
    pid = pid * 10 + (name[i] - '0');
  }
  return pid;
}

int64_t remove_stale(const std::filesystem::path& dir, int depth) {
  namespace fs = std::filesystem;
  int64_t n = 0;
  std::error_code ec;
  std::vector<fs::path> subdirs;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path p = it->path();
    const long pid = tmp_owner(p.filename().string());
    // Ours cannot be in progress (nothing is written before this runs); another live pid may be.
    if (pid > 0 && (pid == ::getpid() || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH))) {
      std::error_code rm;
      if (fs::remove_all(p, rm) > 0 && !rm) ++n;
      continue;
    }
    if (depth > 0 && it->is_directory(ec) && !it->is_symlink(ec)) subdirs.push_back(p);
  }
  for (const auto& d : subdirs) n += remove_stale(d, depth - 1);
  return n;
}

}  // namespace

int64_t remove_stale_temporaries(const std::string& dir, int max_depth) {
  if (!is_dir(dir)) return 0;
  return remove_stale(dir, max_depth);
}

std::string join(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

}  // namespace trinity::file
