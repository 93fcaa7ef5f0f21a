// The HTTP side of the Hub client (libcurl stays inside http.cpp). Redirects are followed by hand so
// that the token goes only to the Hub endpoint's own origin, never to a CDN it redirects to; HEAD
// follows relative redirects only (renamed repos), as huggingface_hub does, so the 302 of an LFS
// file is returned with its X-Linked-* headers. Downloads resume: a partial file is continued with
// `Range: bytes=N-` after a dropped connection, a few times with backoff.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "core/error.h"

namespace trinity::hub {

// The network could not be reached or the connection broke (no HTTP status): callers may fall back
// to the cache.
class NetworkError : public IoError {
  using IoError::IoError;
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // names lowercased; the last value wins
  std::string body;
  std::string url;  // the URL that answered (after the redirects followed)
  std::string header(const std::string& lower_name) const;
};

class HttpClient {
 public:
  // `endpoint`: the Hub (its origin gets the token); `token`: "" = anonymous.
  HttpClient(std::string endpoint, std::string token);

  // HEAD with relative redirects followed; an absolute redirect is returned as is.
  HttpResponse head(const std::string& url) const;
  // GET into memory, every redirect followed.
  HttpResponse get(const std::string& url) const;
  // GET `url` into `dest`, continuing from dest's current size (Range) and retrying dropped
  // connections up to `retries` times (backoff 0.5 s, 1 s, 2 s, ...). `expected_size` < 0: unknown.
  // `label` names the file on the progress bar. A final HTTP error status is returned (not thrown)
  // with the body it came with; success is 200 or 206.
  HttpResponse download(const std::string& url, const std::string& dest, int64_t expected_size,
                        const std::string& label, int retries = 5) const;

  // Resolves `location` against `base` (absolute or relative reference).
  static std::string resolve_url(const std::string& base, const std::string& location);

 private:
  bool same_origin(const std::string& url) const;
  std::string endpoint_, token_;
};

// Percent-encoding as Python's urllib.parse.quote: unreserved characters and `safe` stay.
std::string url_quote(const std::string& s, const std::string& safe = "/");

}  // namespace trinity::hub
