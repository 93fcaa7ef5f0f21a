// One repo's folder in the Hub cache, laid out exactly as huggingface_hub writes it so that either
// side can use what the other downloaded:
//   <cache>/models--Org--Name/refs/<revision>            the commit sha (text, no newline)
//   <cache>/models--Org--Name/blobs/<etag>               file contents (etag: sha256 for LFS files,
//                                                        git blob sha1 otherwise)
//   <cache>/models--Org--Name/blobs/<etag>.incomplete    a download in progress (resumed from its size)
//   <cache>/models--Org--Name/snapshots/<commit>/<path>  relative symlink to ../../blobs/<etag>
//   <cache>/models--Org--Name/.no_exist/<commit>/<path>  empty marker: the file is not in that commit
//   <cache>/.locks/models--Org--Name/<etag>.lock         flock()ed while a blob is written (filelock
//                                                        takes the same fcntl lock on POSIX)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hub/repo.h"

namespace trinity::hub {

class RepoCache {
 public:
  RepoCache(std::string cache_dir, const RepoRef& repo);

  const std::string& cache_dir() const { return cache_dir_; }
  const std::string& repo_dir() const { return repo_dir_; }

  // The commit a revision names in the cache: refs/<revision>, or the revision itself when it is
  // a commit sha with a snapshot folder. nullopt when the cache does not know it.
  std::optional<std::string> commit_for(const std::string& revision) const;
  std::string snapshot_dir(const std::string& commit) const;
  // snapshots/<commit>/<path> when it exists (a dangling symlink does not count).
  std::optional<std::string> cached_file(const std::string& commit, const std::string& path) const;
  bool marked_missing(const std::string& commit, const std::string& path) const;
  void mark_missing(const std::string& commit, const std::string& path) const;
  // Every file of a snapshot, relative paths with '/', sorted.
  std::vector<std::string> snapshot_files(const std::string& commit) const;

  void write_ref(const std::string& revision, const std::string& commit) const;
  std::string blob_path(const std::string& etag) const;
  std::string incomplete_path(const std::string& etag) const;
  std::string lock_path(const std::string& etag) const;
  // snapshots/<commit>/<path> -> ../../blobs/<etag> (with one more "../" per folder of `path`),
  // replacing what was there.
  void link_snapshot(const std::string& commit, const std::string& path, const std::string& etag) const;

 private:
  std::string cache_dir_, repo_dir_, folder_;
};

}  // namespace trinity::hub
