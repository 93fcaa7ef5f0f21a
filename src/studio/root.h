// The studio's root folder (--root): every path the API takes is resolved against it and must stay
// inside it after following symlinks (HttpError 403 otherwise), so no request reads or writes outside.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

namespace trinity::studio {

class Root {
 public:
  // `dir` must exist (ConfigError otherwise); kept as its canonical absolute path.
  explicit Root(const std::string& dir);
  const std::string& dir() const { return dir_; }
  // `path` (relative to the root, or absolute) as a canonical absolute path inside the root.
  // HttpError 400 when empty, 403 when it leaves the root. The file need not exist.
  std::string resolve(const std::string& path, const char* param = "path") const;
  // `abs` relative to the root ("." for the root itself); "" when it is outside.
  std::string relative(const std::string& abs) const;
  bool contains(const std::string& abs) const;
  // Visits what is under the root depth-first, at most `max_depth` folders deep and `max_entries`
  // entries in all (a huge tree is cut short, not walked for minutes); symlinks, hidden folders,
  // node_modules and __pycache__ are never entered. `visit(path, is_dir)` returns, for a folder,
  // whether to enter it (ignored for files).
  void walk(const std::function<bool(const std::filesystem::path&, bool is_dir)>& visit, int max_depth,
            size_t max_entries = 50000) const;

 private:
  std::string dir_;
};

}  // namespace trinity::studio
