// libcurl requests for the Hub client (see http.h).
#include "hub/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

#include "core/console.h"
#include "core/log.h"
#include "core/text.h"

namespace trinity::hub {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxRedirects = 10;

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool is_redirect(long status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

bool is_absolute(const std::string& loc) {
  const std::string l = lower(loc.substr(0, 8));
  return l.rfind("http://", 0) == 0 || l.rfind("https://", 0) == 0;
}

// Scheme, host and port of a URL ("" when it cannot be parsed).
std::string origin(const std::string& url) {
  std::unique_ptr<CURLU, void (*)(CURLU*)> u(curl_url(), &curl_url_cleanup);
  if (curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return "";
  std::string out;
  for (auto part : {CURLUPART_SCHEME, CURLUPART_HOST, CURLUPART_PORT}) {
    char* v = nullptr;
    const CURLUcode rc = curl_url_get(u.get(), part, &v, part == CURLUPART_PORT ? CURLU_DEFAULT_PORT : 0);
    if (rc == CURLUE_OK && v) out += lower(v);
    out += '|';
    curl_free(v);
  }
  return out;
}

// One transfer: the response headers of the last response and where the body goes.
struct Transfer {
  CURL* handle;
  HttpResponse* resp;
  std::function<bool(const char*, size_t)> sink;  // false = abort
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {  // a new response (after 100-continue and the like)
    t->resp->headers.clear();
    return size * n;
  }
  const size_t colon = line.find(':');
  if (colon != std::string::npos) t->resp->headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  if (t->resp->status == 0) curl_easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, &t->resp->status);
  if (t->sink && !t->sink(data, size * n)) return 0;
  return size * n;
}

// Performs one request without following redirects. Throws NetworkError when no response came or
// the body broke off; the caller decides about the status.
void perform(const std::string& method, const std::string& url, const std::string& auth, int64_t range_from,
             HttpResponse& resp, const std::function<bool(const char*, size_t)>& sink) {
  global_init();
  std::unique_ptr<CURL, void (*)(CURL*)> h(curl_easy_init(), &curl_easy_cleanup);
  if (!h) throw NetworkError("hub", "curl_easy_init failed");
  CURL* c = h.get();
  resp = HttpResponse{};
  resp.url = url;
  Transfer t{c, &resp, sink};
  curl_slist* hdrs = nullptr;
  hdrs = curl_slist_append(hdrs, "Accept-Encoding: identity");
  if (!auth.empty()) hdrs = curl_slist_append(hdrs, ("Authorization: Bearer " + auth).c_str());
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> hdr_guard(hdrs, &curl_slist_free_all);
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "trinity/0.1 (huggingface_hub-compatible)");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);  // a stalled transfer counts as dropped
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 30L);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  if (method == "HEAD") curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  const std::string range = range_from > 0 ? std::to_string(range_from) + "-" : "";
  if (!range.empty()) curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
  const CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp.status);
  if (rc != CURLE_OK) {
    throw NetworkError("hub", strcat(method, " ", url, ": ", curl_easy_strerror(rc)));
  }
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int i = 0;
  while (b >= 1000 && i < 4) b /= 1000, ++i;
  char buf[32];
  std::snprintf(buf, sizeof(buf), i == 0 ? "%.0f %s" : "%.1f %s", b, units[i]);
  return buf;
}

// A progress bar on the console's status line (terminal only): bytes, total and speed.
class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total) : label_(std::move(label)), total_(total) {
    auto& con = console::Console::err();
    if (con.terminal()) id_ = con.open_status();
    start_ = last_ = std::chrono::steady_clock::now();
  }
  ~ProgressBar() {
    if (id_ >= 0) console::Console::err().close_status(id_, false);
  }
  void update(int64_t done, bool force = false) {
    const auto now = std::chrono::steady_clock::now();
    if (id_ < 0 || (!force && now - last_ < std::chrono::milliseconds(100))) return;
    last_ = now;
    const double s = std::chrono::duration<double>(now - start_).count();
    const double speed = s > 0 ? static_cast<double>(done - first_) / s : 0;
    std::string bar;
    if (total_ > 0) {
      const int w = 20, fill = static_cast<int>(static_cast<double>(w) * static_cast<double>(done) /
                                                static_cast<double>(total_));
      const int f = std::clamp(fill, 0, w);
      bar.push_back('[');
      bar.append(static_cast<size_t>(f), '#');
      bar.append(static_cast<size_t>(w - f), '.');
      bar.append("] ");
    }
    console::Console::err().set_status(
        id_, strcat("download ", label_, " ", bar, human_bytes(static_cast<double>(done)),
                    total_ > 0 ? " / " + human_bytes(static_cast<double>(total_)) : std::string(), "  ",
                    human_bytes(speed), "/s"));
  }
  void set_first(int64_t b) { first_ = b; }
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::string label_;
  int64_t total_;
  int id_ = -1;
  int64_t first_ = 0;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace

std::string HttpResponse::header(const std::string& lower_name) const {
  const auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

HttpClient::HttpClient(std::string endpoint, std::string token)
    : endpoint_(std::move(endpoint)), token_(std::move(token)) {}

bool HttpClient::same_origin(const std::string& url) const {
  return origin(url) == origin(endpoint_);
}

std::string HttpClient::resolve_url(const std::string& base, const std::string& location) {
  std::unique_ptr<CURLU, void (*)(CURLU*)> u(curl_url(), &curl_url_cleanup);
  if (curl_url_set(u.get(), CURLUPART_URL, base.c_str(), 0) != CURLUE_OK ||
      curl_url_set(u.get(), CURLUPART_URL, location.c_str(), 0) != CURLUE_OK)
    throw IoError("hub", strcat("bad redirect location '", location, "' from ", base));
  char* out = nullptr;
  curl_url_get(u.get(), CURLUPART_URL, &out, 0);
  std::string s = out ? out : "";
  curl_free(out);
  return s;
}

HttpResponse HttpClient::head(const std::string& url) const {
  std::string u = url;
  HttpResponse r;
  for (int i = 0; i <= kMaxRedirects; ++i) {
    perform("HEAD", u, same_origin(u) ? token_ : "", 0, r, {});
    const std::string loc = r.header("location");
    if (!is_redirect(r.status) || loc.empty() || is_absolute(loc)) return r;
    u = resolve_url(u, loc);
  }
  throw IoError("hub", strcat("too many redirects from ", url));
}

HttpResponse HttpClient::get(const std::string& url) const {
  std::string u = url;
  HttpResponse r;
  for (int i = 0; i <= kMaxRedirects; ++i) {
    std::string body;
    perform("GET", u, same_origin(u) ? token_ : "", 0, r, [&](const char* p, size_t n) {
      body.append(p, n);
      return body.size() < (size_t{256} << 20);
    });
    r.body = std::move(body);
    const std::string loc = r.header("location");
    if (!is_redirect(r.status) || loc.empty()) return r;
    u = resolve_url(u, loc);
  }
  throw IoError("hub", strcat("too many redirects from ", url));
}

HttpResponse HttpClient::download(const std::string& url, const std::string& dest, int64_t expected_size,
                                  const std::string& label, int retries) const {
  ProgressBar bar(label, expected_size);
  std::error_code ec;
  bar.set_first(fs::exists(dest, ec) ? static_cast<int64_t>(fs::file_size(dest, ec)) : 0);
  for (int attempt = 0;; ++attempt) {
    const int64_t have = fs::exists(dest, ec) ? static_cast<int64_t>(fs::file_size(dest, ec)) : 0;
    if (expected_size >= 0 && have == expected_size && expected_size > 0) {
      HttpResponse done;
      done.status = 200;
      return done;
    }
    std::string u = url;
    HttpResponse r;
    try {
      for (int i = 0;; ++i) {
        if (i > kMaxRedirects) throw IoError("hub", strcat("too many redirects from ", url));
        std::unique_ptr<FILE, int (*)(FILE*)> f(nullptr, &std::fclose);
        int64_t done = have;
        std::string err_body;
        bool opened = false;
        auto sink = [&](const char* p, size_t n) -> bool {
          if (!opened) {
            opened = true;
            if (r.status == 206) {
              f.reset(std::fopen(dest.c_str(), "ab"));
            } else if (r.status == 200) {
              f.reset(std::fopen(dest.c_str(), "wb"));  // the server ignored the Range: start over
              done = 0;
            }
          }
          if (r.status != 200 && r.status != 206) {
            if (err_body.size() < 65536) err_body.append(p, n);
            return true;
          }
          if (!f || std::fwrite(p, 1, n, f.get()) != n) return false;
          done += static_cast<int64_t>(n);
          bar.update(done);
          return true;
        };
        perform("GET", u, same_origin(u) ? token_ : "", have, r, sink);  // NetworkError: retried below
        if (f && std::fflush(f.get()) != 0) throw IoError("hub", strcat("cannot write '", dest, "'"));
        const std::string loc = r.header("location");
        if (is_redirect(r.status) && !loc.empty()) {
          u = resolve_url(u, loc);
          continue;
        }
        if (r.status == 416 && expected_size >= 0 && have == expected_size) r.status = 206;
        if (r.status == 200 || r.status == 206) {
          if (!opened) std::fclose(std::fopen(dest.c_str(), r.status == 200 ? "wb" : "ab"));  // empty body
          bar.update(done, true);
          if (bar.seconds() > 1 || expected_size > (int64_t{50} << 20))
            log::info("downloaded ", label, " (", human_bytes(static_cast<double>(done)), ")");
        }
        r.body = std::move(err_body);
        return r;
      }
    } catch (const NetworkError& e) {
      if (attempt >= retries) throw;
      const double wait = 0.5 * static_cast<double>(1 << std::min(attempt, 5));
      log::warn("download of ", label, " broke off (", e.what(), "); resuming in ", wait, " s (attempt ", attempt + 2,
                " of ", retries + 1, ")");
      std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    }
  }
}

std::string url_quote(const std::string& s, const std::string& safe) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == '~' ||
        safe.find(static_cast<char>(c)) != std::string::npos) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace trinity::hub
