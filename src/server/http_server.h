// Minimal HTTP/1.1 server for `trinity serve` (no TLS). One event-loop thread (epoll) accepts
// connections and reads and parses requests without holding a worker, under total-time deadlines
// (headers, body, keep-alive idle) and size limits (Content-Length and chunked bodies alike); a
// complete request goes to a bounded worker pool (cheap requests to a separate small pool, so
// /health answers while every worker is busy generating). Responses are written with one send
// per response (TCP_NODELAY), or as chunked streams through a DataSink. Errors detected by the
// HTTP layer (400 malformed, 408 timed out, 413 too large, 503 too many connections) get a body
// from Options::error_body.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace trinity::server::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method, target, path, query;  // target = path[?query]
  Headers headers;
  std::string body;
  std::string remote;                                // peer address
  std::chrono::steady_clock::time_point started;     // first byte of the request
  std::chrono::steady_clock::time_point dispatched;  // complete, handed to a worker
  std::chrono::steady_clock::time_point handled;     // a worker picked it up
  // Case-insensitive lookup; "" when absent.
  std::string header(const std::string& name) const;
};

// Writes chunks of a streamed (Transfer-Encoding: chunked) response; false once the client is gone.
class DataSink {
 public:
  virtual ~DataSink() = default;
  virtual bool write(const char* data, size_t n) = 0;
  virtual void done() = 0;
};

struct Response {
  int status = 200;
  Headers headers;
  std::string body;
  std::string content_type;
  // Streaming: `provider` runs on the worker after the headers went out; it returns false to
  // abort (the connection is closed). `release(success)` runs after it, always.
  std::function<bool(DataSink&)> provider;
  std::function<void(bool success)> release;
  // For the access log (set by handlers when known; -1 = unknown).
  int64_t prompt_tokens = -1, completion_tokens = -1;
  bool write_failed = false;  // set by the server when the client went away

  void set_header(std::string k, std::string v) { headers.emplace_back(std::move(k), std::move(v)); }
  void set_content(std::string b, std::string type) {
    body = std::move(b);
    content_type = std::move(type);
  }
  void set_chunked_content_provider(std::string type, std::function<bool(DataSink&)> p,
                                    std::function<void(bool)> r = {}) {
    content_type = std::move(type);
    provider = std::move(p);
    release = std::move(r);
  }
};

struct Options {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: any free port
  int backlog = 1024;
  int workers = 256;     // threads running handlers (long requests: generation)
  int fast_workers = 2;  // threads for requests `is_fast` selects (health, metrics)
  size_t max_body_bytes = size_t{8} << 20;
  size_t max_header_bytes = size_t{64} << 10;
  int max_connections = 4096;
  std::chrono::milliseconds header_timeout{10000};  // first byte -> end of headers (total)
  std::chrono::milliseconds body_timeout{60000};    // end of headers -> end of body (total)
  std::chrono::milliseconds idle_timeout{30000};    // keep-alive connection with no request
  std::chrono::milliseconds write_timeout{30000};   // one blocked write
  int max_keepalive_requests = 10000;
  std::function<void(const Request&, Response&)> handler;
  std::function<bool(const Request&)> is_fast;
  std::function<std::string(int status, const std::string& message)> error_body;  // JSON error
  // Per request: before a plain response is sent, after a streamed one ends (or for a request the HTTP layer refused:
  // then req may be partial).
  std::function<void(const Request&, const Response&)> on_complete;
};

class Server {
 public:
  explicit Server(Options opts);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  // Binds and listens; returns the port. Throws IoError.
  int bind();
  // Runs the event loop and workers until stop(); returns after in-flight handlers finished.
  void run();
  // Thread-safe; run() returns soon after.
  void stop();
  // Requests waiting for a worker (metrics).
  int64_t queued() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace trinity::server::http
