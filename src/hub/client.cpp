// Hub API listings and cached downloads (see client.h).
#include "hub/client.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/file.h"
#include "core/log.h"
#include "core/sha256.h"
#include "hub/http.h"

namespace trinity::hub {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// flock() on the cache's .locks/<repo>/<etag>.lock while a blob is written: two trinity processes,
// or trinity and huggingface_hub (filelock uses the same lock on POSIX), never write one blob at once.
class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) {
      ::flock(fd_, LOCK_UN);
      ::close(fd_);
    }
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

std::string error_code(const HttpResponse& r) {
  return r.header("x-error-code");
}

// The IoError for a failed Hub request about `ref` (`path`: the file, "" for the repo itself).
[[noreturn]] void throw_http(const HubEnv& env, const RepoRef& ref, const std::string& path, const HttpResponse& r) {
  const std::string what = ref.describe();
  const std::string code = error_code(r);
  if ((r.status == 401 || r.status == 403) && code != "RepoNotFound")
    throw IoError(
        "hub",
        strcat(what, " is gated or private (HTTP ", r.status, " from ", env.endpoint, "): ",
               env.token.empty() ? "set HF_TOKEN (or HF_TOKEN_PATH, or $HF_HOME/token) to a token with access"
                                 : "the token in HF_TOKEN has no access to it",
               "; request access at ", env.endpoint, "/", ref.type == RepoType::kDataset ? "datasets/" : "", ref.id));
  if (r.status == 401 || r.status == 403 ||
      (r.status == 404 && (code == "RepoNotFound" || (code.empty() && path.empty()))))
    throw IoError("hub",
                  strcat(ref.type == RepoType::kModel ? "model" : "dataset", " repository '", ref.id, "' not found on ",
                         env.endpoint, env.token.empty() ? " (if it is private or gated, set HF_TOKEN)" : "",
                         "; a local path by that name does not exist either"));
  if (r.status == 404 && code == "RevisionNotFound")
    throw IoError(
        "hub", strcat("revision '", ref.revision, "' not found in ",
                      ref.type == RepoType::kModel ? "model " : "dataset ", ref.id, " (a branch, tag or commit sha)"));
  if (r.status == 404) throw IoError("hub", strcat("file '", path, "' not found in ", what));
  std::string body = r.body.substr(0, 200);
  throw IoError("hub", strcat("HTTP ", r.status, " from ", r.url, " (", what, path.empty() ? "" : " " + path, ")",
                              body.empty() ? "" : ": " + body));
}

int64_t to_int(const std::string& s, int64_t dflt) {
  try {
    return s.empty() ? dflt : std::stoll(s);
  } catch (...) {
    return dflt;
  }
}

// The next page of a paginated Hub API answer: Link: <url>; rel="next".
std::string next_link(const HttpResponse& r) {
  const std::string link = r.header("link");
  const size_t rel = link.find("rel=\"next\"");
  if (rel == std::string::npos) return "";
  const size_t open = link.rfind('<', rel), close = link.rfind('>', rel);
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  return link.substr(open + 1, close - open - 1);
}

json parse_api(const HttpResponse& r) {
  try {
    return json::parse(r.body);
  } catch (const json::exception& e) {
    throw IoError("hub", strcat("unexpected answer from ", r.url, ": not JSON (", e.what(), ")"));
  }
}

}  // namespace

bool RepoListing::has(const std::string& path) const {
  return std::any_of(files.begin(), files.end(), [&](const RepoFile& f) { return f.path == path; });
}

std::string normalize_etag(const std::string& v) {
  std::string e = v;
  if (e.rfind("W/", 0) == 0) e = e.substr(2);
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return e;
}

HubClient::HubClient(HubEnv env) : env_(std::move(env)) {}

std::string HubClient::repo_url(const RepoRef& ref) const {
  return env_.endpoint + (ref.type == RepoType::kDataset ? "/datasets/" : "/") + ref.id;
}

RepoListing HubClient::list(const RepoRef& ref) const {
  const HttpClient http(env_.endpoint, env_.token);
  const std::string api = strcat(env_.endpoint, "/api/", type_plural(ref.type), "/", ref.id);
  const HttpResponse r = http.get(strcat(api, "/revision/", url_quote(ref.revision, "")));
  if (r.status != 200) throw_http(env_, ref, "", r);
  const json info = parse_api(r);
  RepoListing out;
  if (!info.contains("sha") || !info["sha"].is_string() || !is_commit_sha(info["sha"].get<std::string>()))
    throw IoError("hub", strcat("unexpected answer from ", r.url, ": no commit sha"));
  out.commit = info["sha"].get<std::string>();
  if (ref.type == RepoType::kModel) {
    for (const auto& s : info.value("siblings", json::array()))
      if (s.contains("rfilename") && s["rfilename"].is_string())
        out.files.push_back({s["rfilename"].get<std::string>(), s.value("size", int64_t{-1})});
  } else {
    // Datasets can hold more files than `siblings` lists: the recursive tree, page by page.
    std::string url = strcat(api, "/tree/", out.commit, "?recursive=true&expand=false");
    for (int page = 0; !url.empty() && page < 10000; ++page) {
      const HttpResponse t = http.get(url);
      if (t.status != 200) throw_http(env_, ref, "", t);
      for (const auto& e : parse_api(t)) {
        if (e.value("type", "") != "file" || !e.contains("path")) continue;
        out.files.push_back({e["path"].get<std::string>(), e.value("size", int64_t{-1})});
      }
      url = next_link(t);
      if (!url.empty()) url = HttpClient::resolve_url(t.url, url);
    }
  }
  std::sort(out.files.begin(), out.files.end(), [](const RepoFile& a, const RepoFile& b) { return a.path < b.path; });
  return out;
}

std::string HubClient::download(const RepoRef& ref, const std::string& commit, const std::string& path) const {
  const RepoCache c = cache(ref);
  if (auto p = c.cached_file(commit, path)) return *p;
  const HttpClient http(env_.endpoint, env_.token);
  const std::string url = strcat(repo_url(ref), "/resolve/", url_quote(commit, ""), "/", url_quote(path));
  const HttpResponse h = http.head(url);
  const bool redirect = h.status >= 300 && h.status < 400 && !h.header("location").empty();
  if (h.status == 404 && error_code(h) == "EntryNotFound") c.mark_missing(commit, path);
  if (h.status != 200 && !redirect) throw_http(env_, ref, path, h);
  std::string etag = normalize_etag(h.header("x-linked-etag"));
  if (etag.empty()) etag = normalize_etag(h.header("etag"));
  if (etag.empty() || etag.find('/') != std::string::npos)
    throw IoError("hub", strcat("no usable ETag for '", path, "' in ", ref.describe(), " from ", h.url,
                                " (is HF_ENDPOINT a Hugging Face Hub?)"));
  const int64_t size =
      to_int(h.header("x-linked-size").empty() ? h.header("content-length") : h.header("x-linked-size"), -1);
  const std::string blob = c.blob_path(etag);
  {
    FileLock lock(c.lock_path(etag));
    std::error_code ec;
    if (!fs::exists(blob, ec)) {
      file::make_dirs(fs::path(blob).parent_path().string());
      const std::string part = c.incomplete_path(etag);
      const std::string from = redirect ? HttpClient::resolve_url(h.url, h.header("location")) : h.url;
      const HttpResponse g = http.download(from, part, size, ref.id + "/" + path);
      if (g.status != 200 && g.status != 206) throw_http(env_, ref, path, g);
      const int64_t got = static_cast<int64_t>(fs::file_size(part, ec));
      if (size >= 0 && got != size) {
        fs::remove(part, ec);
        throw IoError("hub", strcat("'", path, "' of ", ref.describe(), ": downloaded ", got, " bytes, expected ", size,
                                    " (the partial file was removed; run again)"));
      }
      // LFS blobs are named by the sha256 of their content: check it (git blob sha1 etags are not).
      if (etag.size() == 64 && std::all_of(etag.begin(), etag.end(),
                                           [](char ch) { return std::isxdigit(static_cast<unsigned char>(ch)); })) {
        const std::string sum = sha256_file(part);
        if (sum != etag) {
          fs::remove(part, ec);
          throw IoError("hub", strcat("'", path, "' of ", ref.describe(), ": sha256 ", sum,
                                      " does not match the Hub's ", etag, " (the download was removed; run again)"));
        }
      }
      fs::rename(part, blob, ec);
      if (ec) throw IoError("hub", strcat("cannot move '", part, "' to '", blob, "': ", ec.message()));
    }
  }
  c.link_snapshot(commit, path, etag);
  return file::join(c.snapshot_dir(commit), path);
}

void HubClient::record_ref(const RepoRef& ref, const std::string& commit) const {
  cache(ref).write_ref(ref.revision, commit);
}

std::string HubClient::cached_commit(const RepoRef& ref, const std::string& why) const {
  const RepoCache c = cache(ref);
  if (auto sha = c.commit_for(ref.revision)) return *sha;
  throw IoError(
      "hub", strcat(ref.describe(), " is not in the Hub cache (", why, "): no refs/", ref.revision, " or snapshot in ",
                    c.repo_dir(), "; unset HF_HUB_OFFLINE to download it, or give a local path"));
}

void HubClient::throw_offline_missing(const RepoRef& ref, const std::string& commit,
                                      const std::vector<std::string>& missing, const std::string& why) const {
  std::string list;
  for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
  throw IoError("hub", strcat(ref.describe(), " (commit ", commit, "): ", why, "; missing from the cache: ", list,
                              " (searched ", cache(ref).snapshot_dir(commit), "); unset HF_HUB_OFFLINE to download"));
}

}  // namespace trinity::hub
