// Path confinement for the studio (root.h).
#include "studio/root.h"

#include <filesystem>

#include "core/error.h"
#include "studio/http_util.h"

namespace trinity::studio {

namespace fs = std::filesystem;

Root::Root(const std::string& dir) {
  std::error_code ec;
  const fs::path p = fs::canonical(fs::absolute(dir), ec);
  if (ec || !fs::is_directory(p)) throw ConfigError("studio", strcat("--root ", dir, ": not a directory"));
  dir_ = p.string();
}

bool Root::contains(const std::string& abs) const {
  return abs == dir_ || (abs.size() > dir_.size() && abs.compare(0, dir_.size(), dir_) == 0 &&
                         (dir_ == "/" || abs[dir_.size()] == '/'));
}

std::string Root::resolve(const std::string& path, const char* param) const {
  if (path.empty())
    throw HttpError{400, strcat("'", param, "' (a path under the studio root) is required"), "invalid_request", param};
  if (path.find('\0') != std::string::npos)
    throw HttpError{400, "a path may not contain NUL", "invalid_request", param};
  const fs::path p = fs::path(path).is_absolute() ? fs::path(path) : fs::path(dir_) / path;
  std::error_code ec;
  const std::string abs = fs::weakly_canonical(p, ec).string();
  if (ec || !contains(abs))
    throw HttpError{403, strcat("'", path, "' is outside the studio root ", dir_), "forbidden", param};
  return abs;
}

void Root::walk(const std::function<bool(const fs::path&, bool)>& visit, int max_depth, size_t max_entries) const {
  size_t seen = 0;
  std::function<void(const fs::path&, int)> rec = [&](const fs::path& dir, int depth) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
         it.increment(ec)) {
      if (++seen > max_entries) return;
      std::error_code e2;
      const bool is_dir = it->is_directory(e2) && !it->is_symlink(e2);
      const std::string name = it->path().filename().string();
      if (is_dir && (name.empty() || name[0] == '.' || name == "node_modules" || name == "__pycache__")) continue;
      if (visit(it->path(), is_dir) && is_dir && depth < max_depth) rec(it->path(), depth + 1);
    }
  };
  rec(dir_, 0);
}

std::string Root::relative(const std::string& abs) const {
  if (!contains(abs)) return "";
  if (abs == dir_) return ".";
  return abs.substr(dir_ == "/" ? 1 : dir_.size() + 1);
}

}  // namespace trinity::studio
