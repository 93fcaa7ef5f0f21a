// The Hub client: repo listings through the Hub API and file downloads into the huggingface_hub
// cache (hub/cache.h), as hf_hub_download / snapshot_download do it:
//   GET  {endpoint}/api/{models|datasets}/{id}/revision/{rev}      -> sha (the commit), siblings
//   GET  {endpoint}/api/datasets/{id}/tree/{sha}?recursive=true    -> every file (paginated, Link)
//   HEAD {endpoint}/[datasets/]{id}/resolve/{sha}/{path}           -> X-Repo-Commit, X-Linked-Etag /
//        ETag, X-Linked-Size / Content-Length, and for LFS files a redirect to the CDN
//   GET  the same URL (redirects followed) into blobs/<etag>.incomplete, resumed with Range after a
//        dropped connection; size check, sha256 check for LFS blobs, rename into blobs/, then the
//        snapshot symlink and refs/<revision>.
// HTTP failures become IoError naming the repo: 401/403 say the repo is gated or private and to
// set HF_TOKEN; 404 names the missing repo, revision or file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hub/cache.h"
#include "hub/env.h"
#include "hub/repo.h"

namespace trinity::hub {

struct RepoFile {
  std::string path;
  int64_t size = -1;
};

struct RepoListing {
  std::string commit;
  std::vector<RepoFile> files;  // sorted by path
  bool has(const std::string& path) const;
};

class HubClient {
 public:
  explicit HubClient(HubEnv env);
  const HubEnv& env() const { return env_; }
  RepoCache cache(const RepoRef& ref) const { return RepoCache(env_.cache_dir, ref); }

  // The commit and files of ref.revision (network). Throws NetworkError when the Hub is unreachable.
  RepoListing list(const RepoRef& ref) const;
  // The snapshot path of `path` at `commit`, downloaded when the cache lacks it (network).
  std::string download(const RepoRef& ref, const std::string& commit, const std::string& path) const;
  // refs/<revision> = commit (nothing when the revision is the commit itself).
  void record_ref(const RepoRef& ref, const std::string& commit) const;

  // Offline: the commit the cache has for ref.revision, or an IoError naming the repo, revision
  // and the cache folder searched.
  std::string cached_commit(const RepoRef& ref, const std::string& why) const;
  // One IoError for files an offline run cannot find in the cache.
  [[noreturn]] void throw_offline_missing(const RepoRef& ref, const std::string& commit,
                                          const std::vector<std::string>& missing, const std::string& why) const;

 private:
  std::string repo_url(const RepoRef& ref) const;  // {endpoint}/[datasets/]{id}
  HubEnv env_;
};

// "etag" from an ETag header value: W/ prefix and quotes dropped.
std::string normalize_etag(const std::string& v);

}  // namespace trinity::hub
