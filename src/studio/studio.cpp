// Trinity Studio server: auth, static assets and API routing (studio.h).
#include "studio/studio.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "buffer/preference_queue.h"
#include "core/error.h"
#include "core/file.h"
#include "core/log.h"
#include "server/http_server.h"
#include "studio/annotate_api.h"
#include "studio/assets.h"
#include "studio/chat.h"
#include "studio/config_edit.h"
#include "studio/http_util.h"
#include "studio/metrics_store.h"
#include "studio/rollouts.h"
#include "studio/root.h"
#include "studio/runs.h"

namespace trinity::studio {

namespace fs = std::filesystem;
namespace http = server::http;

namespace {

constexpr const char* kCookie = "trinity_studio_token";

bool same_token(const std::string& a, const std::string& b) {  // constant time in the length
  if (a.size() != b.size() || a.empty()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

std::string cookie_value(const std::string& header, const std::string& name) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t end = header.find(';', pos);
    if (end == std::string::npos) end = header.size();
    std::string kv = header.substr(pos, end - pos);
    const size_t a = kv.find_first_not_of(' ');
    kv = a == std::string::npos ? "" : kv.substr(a);
    const size_t eq = kv.find('=');
    if (eq != std::string::npos && kv.substr(0, eq) == name) return kv.substr(eq + 1);
    pos = end + 1;
  }
  return "";
}

// The query string without its token parameter.
std::string without_token(const std::string& query) {
  std::string out;
  size_t pos = 0;
  while (pos < query.size()) {
    size_t amp = query.find('&', pos);
    if (amp == std::string::npos) amp = query.size();
    const std::string kv = query.substr(pos, amp - pos);
    if (!kv.starts_with("token=") && kv != "token") out += (out.empty() ? "" : "&") + kv;
    pos = amp + 1;
  }
  return out;
}

// The first preference queue file under the root ("" when none).
std::string find_queue(const Root& root) {
  std::string found;
  root.walk(
      [&](const fs::path& p, bool is_dir) {
        const std::string n = p.filename().string();
        if (is_dir) return found.empty() && !n.starts_with("global_step_") && n != "monitor";
        if (found.empty() && (n.ends_with(".db") || n.ends_with(".sqlite")) &&
            buffer::PreferenceQueue::is_queue_file(p.string()))
          found = p.string();
        return false;
      },
      4, 20000);
  return found;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t c = s.find(',', pos);
    if (c == std::string::npos) c = s.size();
    if (c > pos) out.push_back(s.substr(pos, c - pos));
    pos = c + 1;
  }
  return out;
}

json series_json(const std::string& name, const MetricSeries& full, size_t points) {
  const MetricSeries s = downsample(full, points);
  json steps = json::array(), values = json::array();
  for (size_t i = 0; i < s.steps.size(); ++i) {
    steps.push_back(std::isfinite(s.steps[i]) ? json(s.steps[i]) : json(nullptr));
    values.push_back(std::isfinite(s.values[i]) ? json(s.values[i]) : json(nullptr));
  }
  return {{"name", name},
          {"steps", steps},
          {"values", values},
          {"count", full.steps.size()},
          {"downsampled", s.steps.size() != full.steps.size()}};
}

}  // namespace

std::string random_token() {
  unsigned char b[16] = {0};
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::read(fd, b, sizeof b) != static_cast<ssize_t>(sizeof b)) {
    if (fd >= 0) ::close(fd);
    throw IoError("studio", "cannot read /dev/urandom for the access token");
  }
  ::close(fd);
  std::string s;
  char hex[3];
  for (unsigned char c : b) {
    std::snprintf(hex, sizeof hex, "%02x", c);
    s += hex;
  }
  return s;
}

struct Studio::Impl {
  StudioOptions opts;
  Root root;
  MetricsCache metrics;
  Runs runs;
  Rollouts rollouts;
  Chat chat;
  std::string queue_path;
  std::unique_ptr<buffer::PreferenceQueue> queue;
  std::unique_ptr<http::Server> server;
  int port = 0;

  explicit Impl(StudioOptions o)
      : opts(std::move(o)),
        root(opts.root),
        runs(root, metrics, opts.trinity_bin.empty() ? fs::read_symlink("/proc/self/exe").string() : opts.trinity_bin),
        rollouts(root, runs),
        chat(root) {
    if (opts.token.empty()) opts.token = random_token();
    queue_path = opts.queue.empty() ? find_queue(root) : fs::absolute(opts.queue).lexically_normal().string();
    if (!queue_path.empty()) queue = std::make_unique<buffer::PreferenceQueue>(queue_path);
  }

  void handle(const http::Request& req, http::Response& res) {
    res.set_header("Cache-Control", "no-store");
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("X-Frame-Options", "DENY");
    res.set_header("Referrer-Policy", "no-referrer");
    const bool api = req.path.starts_with("/api/");
    // Auth: ?token= (a page visit sets the cookie and drops it from the URL), cookie, bearer header.
    const std::string q_token = query_param(req.query, "token");
    const std::string auth = req.header("Authorization");
    const std::string bearer = auth.starts_with("Bearer ") ? auth.substr(7) : "";
    const bool by_query = same_token(q_token, opts.token);
    if (!by_query && !same_token(cookie_value(req.header("Cookie"), kCookie), opts.token) &&
        !same_token(bearer, opts.token)) {
      if (api) {
        reply_error(res, 401,
                    "a valid studio access token is required (Authorization: Bearer T, or open the URL "
                    "that `trinity studio` printed)",
                    "unauthorized");
      } else {
        res.status = 401;
        res.set_content(
            "<!doctype html><title>trinity studio</title><p>Open the URL with <code>?token=...</code> that "
            "<code>trinity studio</code> printed when it started.</p>",
            "text/html; charset=utf-8");
      }
      return;
    }
    if (by_query && !api && req.method == "GET") {
      const std::string rest = without_token(req.query);
      res.status = 302;
      res.set_header("Location", req.path + (rest.empty() ? "" : "?" + rest));
      res.set_header("Set-Cookie", strcat(kCookie, "=", opts.token, "; Path=/; HttpOnly; SameSite=Strict"));
      res.set_content("", "text/plain");
      return;
    }
    try {
      if (api) {
        handle_api(req, res);
      } else {
        handle_static(req, res);
      }
    } catch (const HttpError& h) {
      reply_error(res, h.status, h.message, h.code, h.param);
    } catch (const ConfigError& e) {
      reply_error(res, 400, e.what(), "invalid_request");
    } catch (const std::exception& e) {
      reply_error(res, 500, e.what(), "internal_error");
    }
  }

  void handle_static(const http::Request& req, http::Response& res) {
    if (req.method != "GET" && req.method != "HEAD")
      throw HttpError{405, strcat("method ", req.method, " is not allowed on ", req.path), "method_not_allowed", ""};
    const std::string path = req.path == "/index.html" ? "/" : req.path;
    for (const auto& a : assets())
      if (a.path == path) {
        res.status = 200;
        res.set_content(std::string(a.body), std::string(a.content_type));
        if (path == "/")
          res.set_header("Content-Security-Policy",
                         "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                         "connect-src 'self'; frame-ancestors 'none'");
        return;
      }
    throw HttpError{404, strcat("no page ", req.path), "not_found", ""};
  }

  void handle_api(const http::Request& req, http::Response& res) {
    const std::string& p = req.path;
    const bool get = req.method == "GET", post = req.method == "POST";
    auto need = [&](bool ok) {
      if (!ok) throw HttpError{405, strcat("method ", req.method, " is not allowed on ", p), "method_not_allowed", ""};
    };
    const std::string& qs = req.query;
    if (is_annotate_path(p)) {
      if (!queue)
        throw HttpError{404,
                        "no preference queue: make one with `trinity data annotate --queue Q.db ...` and start the "
                        "studio with --queue Q.db (or put it under the root)",
                        "no_queue", ""};
      handle_annotate(*queue, req, res);
      return;
    }
    if (p == "/api/info") {
      need(get);
      reply(res, 200,
            {{"version", opts.version},
             {"root", root.dir()},
             {"pid", static_cast<int64_t>(::getpid())},
             {"queue", queue_path.empty()
                           ? json(nullptr)
                           : json(root.relative(queue_path).empty() ? queue_path : root.relative(queue_path))},
             {"chat_model", chat.loaded().empty() ? json(nullptr) : json(root.relative(chat.loaded()))}});
    } else if (p == "/api/runs") {
      need(get);
      reply(res, 200, runs.list());
    } else if (p == "/api/runs/start") {
      need(post);
      const json b = parse_body(req.body);
      std::vector<std::string> sets;
      if (b.contains("set") && !b["set"].is_null()) {
        if (!b["set"].is_array())
          throw HttpError{400, "'set' must be a list of \"key=value\" strings", "invalid_request", "set"};
        for (const auto& s : b["set"]) {
          if (!s.is_string())
            throw HttpError{400, "'set' must be a list of \"key=value\" strings", "invalid_request", "set"};
          if (!s.get<std::string>().empty()) sets.push_back(s.get<std::string>());
        }
      }
      reply(res, 200, runs.start(str_field(b, "config", true), sets));
    } else if (p == "/api/runs/stop") {
      need(post);
      reply(res, 200, runs.stop(str_field(parse_body(req.body), "run", true)));
    } else if (p == "/api/runs/resume") {
      need(post);
      reply(res, 200, runs.resume(str_field(parse_body(req.body), "run", true)));
    } else if (p == "/api/runs/log") {
      need(get);
      reply(res, 200, runs.log(query_param(qs, "run"), query_int(qs, "tail", 200, 1, 100000)));
    } else if (p == "/api/metrics/keys") {
      need(get);
      auto f = metrics_file(query_param(qs, "run"));
      reply(res, 200, {{"series", f->series_names()}, {"lines", f->lines()}});
    } else if (p == "/api/metrics") {
      need(get);
      auto f = metrics_file(query_param(qs, "run"));
      const auto names = split_commas(query_param(qs, "series"));
      if (names.empty())
        throw HttpError{400, "'series' (comma-separated role:metric names) is required", "invalid_request", "series"};
      const auto points = static_cast<size_t>(query_int(qs, "points", 2000, 4, 1000000));
      const auto all = f->series(names);
      json out = json::array();
      for (size_t i = 0; i < names.size(); ++i) out.push_back(series_json(names[i], all[i], points));
      reply(res, 200, {{"series", out}, {"lines", f->lines()}});
    } else if (p == "/api/rollouts/sources") {
      need(get);
      reply(res, 200, rollouts.sources(query_param(qs, "run")));
    } else if (p == "/api/rollouts") {
      need(get);
      reply(res, 200, rollouts.page(qs));
    } else if (p == "/api/rollouts/one") {
      need(get);
      reply(res, 200, rollouts.one(query_param(qs, "source"), query_int(qs, "id", -1, 0, INT64_MAX)));
    } else if (p == "/api/rollouts/steps") {
      need(get);
      reply(res, 200, rollouts.steps(query_param(qs, "source")));
    } else if (p == "/api/configs") {
      need(get);
      reply(res, 200, {{"configs", list_configs()}});
    } else if (p == "/api/config") {
      need(get);
      const std::string abs = root.resolve(query_param(qs, "path"));
      if (!file::exists(abs) || file::is_dir(abs))
        throw HttpError{404, strcat("no config file '", query_param(qs, "path"), "'"), "not_found", "path"};
      reply(res, 200, {{"path", root.relative(abs)}, {"text", file::read_all(abs)}});
    } else if (p == "/api/config/check") {
      need(post);
      const json b = parse_body(req.body);
      const std::string path = str_field(b, "path", false);
      std::string base = root.dir(), label = "<editor>";
      if (!path.empty()) {
        const std::string abs = root.resolve(path);
        base = fs::path(abs).parent_path().string();
        label = abs;
      }
      reply(res, 200, check_config_text(str_field(b, "text", true), label, base, form_keys()));
    } else if (p == "/api/config/set") {
      need(post);
      const json b = parse_body(req.body);
      if (!b.contains("value")) throw HttpError{400, "'value' is required", "invalid_request", "value"};
      reply(res, 200, {{"text", yaml_set(str_field(b, "text", true), str_field(b, "key", true), b["value"])}});
    } else if (p == "/api/config/save") {
      need(post);
      const json b = parse_body(req.body);
      const std::string abs = root.resolve(str_field(b, "path", true));
      if (!(abs.ends_with(".yaml") || abs.ends_with(".yml")))
        throw HttpError{400, "a config is saved as a .yaml or .yml file", "invalid_value", "path"};
      if (file::is_dir(abs))
        throw HttpError{400, strcat("'", str_field(b, "path", true), "' is a folder"), "invalid_value", "path"};
      file::make_dirs(fs::path(abs).parent_path().string());
      file::write_atomic(abs, str_field(b, "text", true));
      reply(res, 200, {{"path", root.relative(abs)}});
    } else if (p == "/api/chat/models") {
      need(get);
      reply(res, 200, chat.models());
    } else if (p == "/api/chat") {
      need(post);
      reply(res, 200, chat.chat(parse_body(req.body)));
    } else {
      throw HttpError{404, strcat("no route ", req.method, " ", p, " (see docs/studio.md)"), "not_found", ""};
    }
  }

  std::shared_ptr<MetricsFile> metrics_file(const std::string& run) {
    const std::string dir = runs.run_dir(run);
    auto f = metrics.get(file::join(dir, "monitor/metrics.jsonl"));
    f->refresh();
    return f;
  }

  json list_configs() const {
    std::vector<std::string> out;
    root.walk(
        [&](const fs::path& p, bool is_dir) {
          const std::string n = p.filename().string();
          if (is_dir) return !n.starts_with("global_step_") && n != "build" && n != "monitor";
          if (n.ends_with(".yaml") || n.ends_with(".yml")) out.push_back(root.relative(p.string()));
          return false;
        },
        5);
    std::sort(out.begin(), out.end());
    return out;
  }
};

Studio::Studio(StudioOptions opts) : impl_(std::make_unique<Impl>(std::move(opts))) {
  http::Options ho;
  ho.host = impl_->opts.host;
  ho.port = impl_->opts.port;
  ho.workers = 8;
  ho.fast_workers = 2;
  ho.max_body_bytes = size_t{4} << 20;
  ho.handler = [this](const http::Request& req, http::Response& res) { impl_->handle(req, res); };
  ho.error_body = [](int status, const std::string& msg) {
    return error_json(status, msg, status == 413 ? "request_too_large" : status == 408 ? "request_timeout" : "");
  };
  impl_->server = std::make_unique<http::Server>(std::move(ho));
}

Studio::~Studio() = default;

int Studio::bind() {
  return impl_->port = impl_->server->bind();
}
void Studio::run() {
  impl_->server->run();
}
void Studio::stop() {
  impl_->server->stop();
}
const std::string& Studio::token() const {
  return impl_->opts.token;
}
std::string Studio::queue_path() const {
  return impl_->queue_path;
}

std::string Studio::url() const {
  const std::string host = impl_->opts.host == "0.0.0.0" || impl_->opts.host.empty() ? "127.0.0.1" : impl_->opts.host;
  return strcat("http://", host.find(':') != std::string::npos ? "[" + host + "]" : host, ":", impl_->port,
                "/?token=", impl_->opts.token);
}

}  // namespace trinity::studio
