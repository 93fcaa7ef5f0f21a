// Internal socket helpers of the env layer (websocket.cpp, http_client.cpp): URL parsing, a deadline,
// and a non-blocking TCP socket whose every connect / send / receive waits at most until the deadline
// (poll with the remaining time). Errors are EnvError naming the URL: refused / unreachable -> kConnect,
// deadline -> kTimeout, EOF / reset -> kClosed. Sends use MSG_NOSIGNAL (no SIGPIPE). Name resolution
// (getaddrinfo) is the one blocking step without a deadline; numeric hosts resolve at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "env/session.h"

namespace trinity::env {

struct Url {
  std::string scheme;  // "ws" | "http" ("wss" / "https" are rejected: no TLS)
  std::string host;    // without brackets for IPv6
  int port = 0;
  std::string path;                 // "/..." including the query; "/" when the URL has none
  std::string text;                 // the URL as given (for messages)
  std::string host_header() const;  // "host:port" (brackets for IPv6)
};

// Parses "scheme://host[:port][/path]"; scheme ws or http (default port 80). ConfigError otherwise.
Url parse_url(const std::string& url);

class Deadline {
 public:
  explicit Deadline(double timeout_s);
  int remaining_ms() const;  // >= 0, rounded up so that a positive remainder never polls 0 ms forever
  bool expired() const;
  double timeout_s() const { return timeout_s_; }

 private:
  std::chrono::steady_clock::time_point end_;
  double timeout_s_;
};

// "5 s", "0.3 s": a timeout for messages.
std::string seconds_text(double s);

// HTTP header text helpers: ASCII lower case; a header field without surrounding blanks and '\r'.
std::string ascii_lower(std::string s);
std::string trim_field(std::string_view s);

// A connected TCP socket (non-blocking fd, closed on destruction). `where` is the URL for messages.
class Socket {
 public:
  static Socket connect(const Url& url, const Deadline& deadline);
  Socket() = default;
  Socket(Socket&& o) noexcept;
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket();

  bool is_open() const { return fd_ >= 0; }
  // Sends all bytes before the deadline (kTimeout / kClosed).
  void send_all(std::string_view data, const Deadline& deadline, const char* waiting_for) const;
  // Appends what arrives (at least one byte) to `buf`; returns false on EOF. kTimeout at the deadline
  // ("timed out after T s waiting for <waiting_for>"), kClosed on a reset.
  bool receive_some(std::string& buf, const Deadline& deadline, const char* waiting_for) const;
  void close() noexcept;
  const std::string& where() const { return where_; }

 private:
  int fd_ = -1;
  std::string where_;
};

}  // namespace trinity::env
