// Non-blocking TCP with deadlines for the env layer (see net.h).
#include "env/net.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace trinity::env {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Waits for `events` on fd until the deadline; false when it expired.
bool wait_fd(int fd, short events, const Deadline& deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, deadline.remaining_ms());
    if (rc > 0) return true;
    if (rc == 0) {
      if (deadline.expired()) return false;
      continue;
    }
    if (errno != EINTR) return true;  // let the following call report the error
  }
}

}  // namespace

std::string Url::host_header() const {
  const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port);
}

Url parse_url(const std::string& url) {
  Url u;
  u.text = url;
  const size_t sep = url.find("://");
  if (sep == std::string::npos)
    throw ConfigError("env", strcat("URL '", url, "' has no scheme: expected ws://host:port/path or http://..."));
  u.scheme = lower(url.substr(0, sep));
  if (u.scheme != "ws" && u.scheme != "http")
    throw ConfigError(
        "env", strcat("URL '", url, "': scheme '", u.scheme, "' is not supported (expected ws or http; no TLS)"));
  std::string rest = url.substr(sep + 3);
  const size_t slash = rest.find_first_of("/?");
  u.path = slash == std::string::npos ? "/" : rest.substr(slash);
  if (u.path[0] == '?') u.path = "/" + u.path;
  std::string authority = rest.substr(0, slash);
  if (const size_t at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
  std::string port_text;
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) throw ConfigError("env", strcat("URL '", url, "': unterminated '[' in host"));
    u.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') throw ConfigError("env", strcat("URL '", url, "': bad text after ']'"));
      port_text = authority.substr(close + 2);
    }
  } else {
    const size_t colon = authority.rfind(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string::npos) port_text = authority.substr(colon + 1);
  }
  if (u.host.empty()) throw ConfigError("env", strcat("URL '", url, "' has no host"));
  u.port = 80;
  if (!port_text.empty()) {
    char* end = nullptr;
    const long p = std::strtol(port_text.c_str(), &end, 10);
    if (*end != '\0' || p <= 0 || p > 65535)
      throw ConfigError("env", strcat("URL '", url, "': port '", port_text, "' is not a number in 1..65535"));
    u.port = static_cast<int>(p);
  }
  return u;
}

Deadline::Deadline(double timeout_s)
    : end_(std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
               std::chrono::duration<double>(timeout_s > 0 ? std::min(timeout_s, 1e8) : 0.0))),
      timeout_s_(timeout_s) {}

int Deadline::remaining_ms() const {
  const auto left = end_ - std::chrono::steady_clock::now();
  if (left <= std::chrono::steady_clock::duration::zero()) return 0;
  const double ms = std::ceil(std::chrono::duration<double, std::milli>(left).count());
  return ms > 1e9 ? 1000000000 : static_cast<int>(ms);
}

bool Deadline::expired() const {
  return std::chrono::steady_clock::now() >= end_;
}

std::string ascii_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim_field(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r')) --b;
  return std::string(s.substr(a, b - a));
}

std::string seconds_text(double s) {
  std::ostringstream os;
  os << s << " s";
  return os.str();
}

Socket::Socket(Socket&& o) noexcept : fd_(o.fd_), where_(std::move(o.where_)) {
  o.fd_ = -1;
}

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    where_ = std::move(o.where_);
    o.fd_ = -1;
  }
  return *this;
}

Socket::~Socket() {
  close();
}

void Socket::close() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Socket Socket::connect(const Url& url, const Deadline& deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(url.port);
  const int gai = ::getaddrinfo(url.host.c_str(), port.c_str(), &hints, &res);
  if (gai != 0)
    throw EnvError(FailReason::kConnect,
                   strcat(url.text, ": cannot resolve host '", url.host, "': ", ::gai_strerror(gai)));
  std::string last_error = "no address";
  bool timed_out = false;
  Socket s;
  s.where_ = url.text;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    int err = 0;
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        if (!wait_fd(fd, POLLOUT, deadline)) {
          ::close(fd);
          timed_out = true;
          break;
        }
        socklen_t len = sizeof(err);
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
    if (err == 0) {
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      s.fd_ = fd;
      break;
    }
    last_error = std::strerror(err);
    ::close(fd);
  }
  ::freeaddrinfo(res);
  if (s.fd_ >= 0) return s;
  if (timed_out)
    throw EnvError(FailReason::kTimeout,
                   strcat(url.text, ": connect timed out after ", seconds_text(deadline.timeout_s())));
  throw EnvError(FailReason::kConnect, strcat(url.text, ": cannot connect to ", url.host_header(), ": ", last_error));
}

void Socket::send_all(std::string_view data, const Deadline& deadline, const char* waiting_for) const {
  if (fd_ < 0) throw EnvError(FailReason::kClosed, strcat(where_, ": the connection is closed"));
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_fd(fd_, POLLOUT, deadline))
        throw EnvError(FailReason::kTimeout, strcat(where_, ": timed out after ", seconds_text(deadline.timeout_s()),
                                                    " sending ", waiting_for));
      continue;
    }
    throw EnvError(FailReason::kClosed,
                   strcat(where_, ": connection lost sending ", waiting_for, ": ", std::strerror(errno)));
  }
}

bool Socket::receive_some(std::string& buf, const Deadline& deadline, const char* waiting_for) const {
  if (fd_ < 0) throw EnvError(FailReason::kClosed, strcat(where_, ": the connection is closed"));
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n > 0) {
      buf.append(chunk, static_cast<size_t>(n));
      return true;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_fd(fd_, POLLIN, deadline))
        throw EnvError(FailReason::kTimeout, strcat(where_, ": timed out after ", seconds_text(deadline.timeout_s()),
                                                    " waiting for ", waiting_for));
      continue;
    }
    throw EnvError(FailReason::kClosed,
                   strcat(where_, ": connection lost waiting for ", waiting_for, ": ", std::strerror(errno)));
  }
}

}  // namespace trinity::env
