// The huggingface_hub cache layout of one repo (see cache.h).
#include "hub/cache.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/file.h"

namespace trinity::hub {

namespace fs = std::filesystem;

RepoCache::RepoCache(std::string cache_dir, const RepoRef& repo)
    : cache_dir_(std::move(cache_dir)), folder_(repo_folder_name(repo)) {
  repo_dir_ = file::join(cache_dir_, folder_);
}

std::optional<std::string> RepoCache::commit_for(const std::string& revision) const {
  std::error_code ec;
  const std::string ref = file::join(file::join(repo_dir_, "refs"), revision);
  if (fs::is_regular_file(ref, ec)) {
    std::ifstream in(ref);
    std::ostringstream os;
    os << in.rdbuf();
    std::string sha = os.str();
    while (!sha.empty() && (sha.back() == '\n' || sha.back() == '\r' || sha.back() == ' ')) sha.pop_back();
    if (is_commit_sha(sha)) return sha;
  }
  if (is_commit_sha(revision) && fs::is_directory(snapshot_dir(revision), ec)) return revision;
  return std::nullopt;
}

std::string RepoCache::snapshot_dir(const std::string& commit) const {
  return file::join(file::join(repo_dir_, "snapshots"), commit);
}

std::optional<std::string> RepoCache::cached_file(const std::string& commit, const std::string& path) const {
  const std::string p = file::join(snapshot_dir(commit), path);
  std::error_code ec;
  if (fs::exists(p, ec) && !fs::is_directory(p, ec)) return p;  // exists() follows the symlink
  return std::nullopt;
}

bool RepoCache::marked_missing(const std::string& commit, const std::string& path) const {
  std::error_code ec;
  return fs::exists(file::join(file::join(file::join(repo_dir_, ".no_exist"), commit), path), ec);
}

void RepoCache::mark_missing(const std::string& commit, const std::string& path) const {
  const fs::path p = fs::path(repo_dir_) / ".no_exist" / commit / path;
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  std::ofstream(p.string()).flush();
}

std::vector<std::string> RepoCache::snapshot_files(const std::string& commit) const {
  std::vector<std::string> out;
  const fs::path root = snapshot_dir(commit);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::follow_directory_symlink, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code e2;
    if (fs::is_directory(it->path(), e2) || !fs::exists(it->path(), e2)) continue;
    out.push_back(it->path().lexically_relative(root).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void RepoCache::write_ref(const std::string& revision, const std::string& commit) const {
  if (revision == commit) return;
  const std::string ref = file::join(file::join(repo_dir_, "refs"), revision);
  file::make_dirs(fs::path(ref).parent_path().string());
  // huggingface_hub writes the sha without a newline; readers strip whitespace anyway.
  file::write_atomic(ref, commit);
}

std::string RepoCache::blob_path(const std::string& etag) const {
  return file::join(file::join(repo_dir_, "blobs"), etag);
}

std::string RepoCache::incomplete_path(const std::string& etag) const {
  return blob_path(etag) + ".incomplete";
}

std::string RepoCache::lock_path(const std::string& etag) const {
  return file::join(file::join(file::join(cache_dir_, ".locks"), folder_), etag + ".lock");
}

void RepoCache::link_snapshot(const std::string& commit, const std::string& path, const std::string& etag) const {
  const fs::path link = fs::path(snapshot_dir(commit)) / path;
  const fs::path target = fs::path(blob_path(etag)).lexically_relative(link.parent_path());
  std::error_code ec;
  fs::create_directories(link.parent_path(), ec);
  if (ec) throw IoError("hub", strcat("cannot create '", link.parent_path().string(), "': ", ec.message()));
  fs::remove(link, ec);
  fs::create_symlink(target, link, ec);
  if (ec)
    throw IoError("hub",
                  strcat("cannot create the symlink '", link.string(), "' -> '", target.string(), "': ", ec.message()));
}

}  // namespace trinity::hub
