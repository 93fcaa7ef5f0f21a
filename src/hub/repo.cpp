// Hub repo ids and cache folder names (see repo.h).
#include "hub/repo.h"

#include <cctype>
#include <filesystem>

namespace trinity::hub {

std::string RepoRef::describe() const {
  return std::string(type == RepoType::kModel ? "model " : "dataset ") + id + "@" + revision;
}

const char* type_plural(RepoType t) {
  return t == RepoType::kModel ? "models" : "datasets";
}

namespace {

bool valid_part(const std::string& p) {
  if (p.empty()) return false;
  for (unsigned char c : p)
    if (!std::isalnum(c) && c != '_' && c != '-' && c != '.') return false;
  // \b...\b in huggingface_hub's regex: the part starts and ends with a word character.
  auto word = [](unsigned char c) { return std::isalnum(c) || c == '_'; };
  return word(static_cast<unsigned char>(p.front())) && word(static_cast<unsigned char>(p.back()));
}

}  // namespace

bool valid_repo_id(const std::string& id) {
  if (id.empty() || id.size() > 96) return false;
  if (id.find("--") != std::string::npos || id.find("..") != std::string::npos) return false;
  const size_t slash = id.find('/');
  if (slash == std::string::npos) return valid_part(id);
  if (id.find('/', slash + 1) != std::string::npos) return false;
  return valid_part(id.substr(0, slash)) && valid_part(id.substr(slash + 1));
}

std::optional<RepoRef> parse_repo_id(const std::string& s, RepoType type) {
  if (s.empty() || s[0] == '/' || s[0] == '.' || s[0] == '~') return std::nullopt;
  std::error_code ec;
  if (std::filesystem::exists(s, ec)) return std::nullopt;
  RepoRef r;
  r.type = type;
  r.id = s;
  if (const size_t at = s.find('@'); at != std::string::npos) {
    r.id = s.substr(0, at);
    r.revision = s.substr(at + 1);
    if (r.revision.empty()) return std::nullopt;
  }
  if (!valid_repo_id(r.id)) return std::nullopt;
  return r;
}

std::string repo_folder_name(const RepoRef& r) {
  std::string out = type_plural(r.type);
  out += "--";
  for (char c : r.id) {
    if (c == '/')
      out += "--";
    else
      out += c;
  }
  return out;
}

bool is_commit_sha(const std::string& s) {
  if (s.size() != 40) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace trinity::hub
