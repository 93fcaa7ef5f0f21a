// HTTP/1.1 server (see http_server.h). The event loop owns every connection that is idle or being
// read; a connection with a complete request belongs to the worker that handles it until the
// response is written, then comes back to the loop (keep-alive) through a queue and an eventfd.
#include "server/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "core/error.h"
#include "core/log.h"
#include "core/text.h"

namespace trinity::server::http {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

bool iequals(const std::string& a, const char* b) {
  const size_t n = std::strlen(b);
  if (a.size() != n) return false;
  for (size_t i = 0; i < n; ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

bool icontains(const std::string& hay, const char* needle) {
  std::string h = hay;
  for (auto& c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return h.find(needle) != std::string::npos;
}

const char* reason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 302:
      return "Found";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 413:
      return "Payload Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

// Sends all of `data` on a non-blocking socket, waiting for room at most `timeout` per stall.
bool send_all(int fd, const char* data, size_t n, std::chrono::milliseconds timeout) {
  while (n > 0) {
    const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w > 0) {
      data += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      const int r = ::poll(&p, 1, static_cast<int>(timeout.count()));
      if (r <= 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL))) return false;
      continue;
    }
    return false;
  }
  return true;
}

std::string head_of(const Response& res, bool keep_alive, bool chunked) {
  std::string h = strcat("HTTP/1.1 ", res.status, " ", reason(res.status), "\r\n");
  if (!res.content_type.empty()) h += "Content-Type: " + res.content_type + "\r\n";
  for (const auto& [k, v] : res.headers) h += k + ": " + v + "\r\n";
  if (chunked)
    h += "Transfer-Encoding: chunked\r\n";
  else if (res.status != 204 && res.status >= 200)
    h += strcat("Content-Length: ", res.body.size(), "\r\n");
  h += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return h;
}

class ChunkSink : public DataSink {
 public:
  ChunkSink(int fd, std::chrono::milliseconds timeout) : fd_(fd), timeout_(timeout) {}
  bool write(const char* data, size_t n) override {
    if (failed_ || done_) return false;
    if (n == 0) return true;
    char hex[24];
    const int k = std::snprintf(hex, sizeof(hex), "%zx\r\n", n);
    buf_.assign(hex, static_cast<size_t>(k));
    buf_.append(data, n);
    buf_ += "\r\n";
    if (!send_all(fd_, buf_.data(), buf_.size(), timeout_)) failed_ = true;
    return !failed_;
  }
  void done() override {
    if (failed_ || done_) return;
    done_ = true;
    if (!send_all(fd_, "0\r\n\r\n", 5, timeout_)) failed_ = true;
  }
  bool failed() const { return failed_; }
  bool finished() const { return done_; }

 private:
  int fd_;
  std::chrono::milliseconds timeout_;
  std::string buf_;
  bool failed_ = false, done_ = false;
};

enum class St { kIdle, kHeaders, kBody, kBusy, kDrain };
enum class ChunkSt { kSize, kData, kDataEnd, kTrailer };

struct Conn {
  int fd = -1;
  std::string remote;
  std::string in;
  size_t scan_from = 0;  // where the search for the end of the headers resumes
  St st = St::kIdle;
  Clock::time_point deadline;
  Request req;
  bool keep_alive = true;
  bool chunked = false;
  size_t content_left = 0;
  ChunkSt cst = ChunkSt::kSize;
  size_t chunk_left = 0;
  size_t drain_left = SIZE_MAX;  // bytes to discard before closing (drain state)
  int served = 0;
  bool close_after = false;  // set by the worker
};

// Outcome of parsing what a connection has buffered.
struct Parse {
  enum Kind { kMore, kDone, kError } kind = kMore;
  int status = 0;
  std::string message;
};

Parse error(int status, std::string msg) {
  return Parse{Parse::kError, status, std::move(msg)};
}
Parse done() {
  return Parse{Parse::kDone, 0, ""};
}

}  // namespace

std::string Request::header(const std::string& name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name.c_str())) return v;
  return "";
}

struct Server::Impl {
  Options o;
  int listen_fd = -1, epoll_fd = -1, wake_fd = -1;
  std::atomic<bool> stopping{false};
  std::unordered_map<int, std::unique_ptr<Conn>> conns;
  int busy = 0;  // loop-only count of connections held by workers
  Clock::time_point accept_paused_until{};

  struct Pool {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Conn*> q;
    bool quit = false;
    std::vector<std::thread> threads;
  } pool, fast;

  std::mutex ret_mu;
  std::vector<Conn*> returned;

  void wake() const {
    const uint64_t one = 1;
    if (wake_fd >= 0) {
      [[maybe_unused]] const ssize_t r = ::write(wake_fd, &one, sizeof(one));
    }
  }

  std::string error_body(int status, const std::string& msg) const {
    return o.error_body ? o.error_body(status, msg) : msg;
  }

  // Best-effort small response from the loop thread (errors); the connection then drains or closes.
  void send_error(Conn& c, int status, const std::string& msg) {
    Response res;
    res.status = status;
    res.set_content(error_body(status, msg), "application/json");
    const std::string s = head_of(res, false, false) + res.body;
    send_all(c.fd, s.data(), s.size(), 200ms);
    if (o.on_complete) {
      if (c.req.started == Clock::time_point{}) c.req.started = Clock::now();
      c.req.dispatched = c.req.handled = Clock::now();
      o.on_complete(c.req, res);
    }
  }

  void close_conn(int fd) {
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    conns.erase(fd);
  }

  // Answers `status` and discards what the client still sends (up to `drain` bytes, a few
  // seconds), so that it reads the answer instead of a connection reset; then closes.
  void refuse(Conn& c, int status, const std::string& msg, size_t drain) {
    send_error(c, status, msg);
    ::shutdown(c.fd, SHUT_WR);
    c.st = St::kDrain;
    c.drain_left = drain;
    c.in.clear();
    c.deadline = Clock::now() + 2s;
    if (drain == 0) close_conn(c.fd);
  }

  void reset_for_next(Conn& c) {
    c.st = St::kIdle;
    c.req = Request{};
    c.scan_from = 0;
    c.chunked = false;
    c.content_left = 0;
    c.cst = ChunkSt::kSize;
    c.chunk_left = 0;
    c.deadline = Clock::now() + o.idle_timeout;
  }

  Parse parse_head(Conn& c, size_t end) {
    const std::string head = c.in.substr(0, end);
    c.in.erase(0, end + 4);
    size_t line_end = head.find("\r\n");
    const std::string line = head.substr(0, line_end);
    const size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
    if (sp1 == std::string::npos || sp2 == sp1) return error(400, "malformed HTTP request line");
    Request& r = c.req;
    r.method = line.substr(0, sp1);
    r.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    const std::string version = line.substr(sp2 + 1);
    if (version != "HTTP/1.1" && version != "HTTP/1.0") return error(400, "unsupported HTTP version '" + version + "'");
    if (r.method.empty() || r.target.empty() || r.target[0] != '/') return error(400, "malformed HTTP request target");
    const size_t q = r.target.find('?');
    r.path = r.target.substr(0, q);
    if (q != std::string::npos) r.query = r.target.substr(q + 1);
    while (line_end != std::string::npos) {
      const size_t b = line_end + 2;
      line_end = head.find("\r\n", b);
      const std::string h = head.substr(b, line_end == std::string::npos ? std::string::npos : line_end - b);
      if (h.empty()) continue;
      const size_t colon = h.find(':');
      if (colon == std::string::npos || colon == 0 || h[0] == ' ' || h[0] == '\t')
        return error(400, "malformed HTTP header line");
      r.headers.emplace_back(h.substr(0, colon), trim(h.substr(colon + 1)));
    }
    const std::string conn_h = r.header("Connection");
    c.keep_alive = version == "HTTP/1.1" ? !icontains(conn_h, "close") : icontains(conn_h, "keep-alive");
    const std::string te = r.header("Transfer-Encoding"), cl = r.header("Content-Length");
    if (!te.empty()) {
      if (!icontains(te, "chunked")) return error(501, "unsupported Transfer-Encoding '" + te + "'");
      if (!cl.empty()) return error(400, "both Content-Length and Transfer-Encoding given");
      c.chunked = true;
    } else if (!cl.empty()) {
      if (cl.size() > 18 || cl.find_first_not_of("0123456789") != std::string::npos)
        return error(400, "invalid Content-Length '" + cl + "'");
      c.content_left = std::stoull(cl);
      if (c.content_left > o.max_body_bytes)
        return error(413, strcat("request body is larger than the limit of ", o.max_body_bytes, " bytes"));
      r.body.reserve(c.content_left);
    }
    if ((c.chunked || c.content_left > 0) && icontains(r.header("Expect"), "100-continue")) {
      static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      send_all(c.fd, kContinue, sizeof(kContinue) - 1, 200ms);
    }
    return Parse{};
  }

  Parse parse_chunked(Conn& c) {
    for (;;) {
      switch (c.cst) {
        case ChunkSt::kSize:
        case ChunkSt::kTrailer: {
          const size_t e = c.in.find("\r\n");
          if (e == std::string::npos) {
            if (c.in.size() > 4096) return error(400, "malformed chunked body (chunk header too long)");
            return Parse{};
          }
          const std::string line = c.in.substr(0, e);
          c.in.erase(0, e + 2);
          if (c.cst == ChunkSt::kTrailer) {
            if (line.empty()) return done();
            continue;  // trailer fields are ignored
          }
          const std::string hex = trim(line.substr(0, line.find(';')));
          if (hex.empty() || hex.size() > 15 || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
            return error(400, "malformed chunked body (bad chunk size)");
          c.chunk_left = std::stoull(hex, nullptr, 16);
          if (c.chunk_left == 0) {
            c.cst = ChunkSt::kTrailer;
            continue;
          }
          if (c.req.body.size() + c.chunk_left > o.max_body_bytes)
            return error(413, strcat("request body is larger than the limit of ", o.max_body_bytes, " bytes"));
          c.cst = ChunkSt::kData;
          continue;
        }
        case ChunkSt::kData: {
          const size_t n = std::min(c.chunk_left, c.in.size());
          c.req.body.append(c.in, 0, n);
          c.in.erase(0, n);
          c.chunk_left -= n;
          if (c.chunk_left > 0) return Parse{};
          c.cst = ChunkSt::kDataEnd;
          continue;
        }
        case ChunkSt::kDataEnd:
          if (c.in.size() < 2) return Parse{};
          if (c.in[0] != '\r' || c.in[1] != '\n') return error(400, "malformed chunked body (missing CRLF after data)");
          c.in.erase(0, 2);
          c.cst = ChunkSt::kSize;
          continue;
      }
    }
  }

  // Advances the connection's request with what is buffered.
  Parse parse(Conn& c) {
    if (c.st == St::kIdle) {
      size_t skip = 0;
      while (skip < c.in.size() && (c.in[skip] == '\r' || c.in[skip] == '\n')) ++skip;
      c.in.erase(0, skip);
      if (c.in.empty()) return Parse{};
      c.st = St::kHeaders;
      c.req.started = Clock::now();
      c.deadline = c.req.started + o.header_timeout;
      c.scan_from = 0;
    }
    if (c.st == St::kHeaders) {
      const size_t end = c.in.find("\r\n\r\n", c.scan_from);
      if (end == std::string::npos) {
        if (c.in.size() > o.max_header_bytes)
          return error(431, strcat("request headers are larger than the limit of ", o.max_header_bytes, " bytes"));
        c.scan_from = c.in.size() >= 3 ? c.in.size() - 3 : 0;
        return Parse{};
      }
      if (end > o.max_header_bytes)
        return error(431, strcat("request headers are larger than the limit of ", o.max_header_bytes, " bytes"));
      Parse p = parse_head(c, end);
      if (p.kind == Parse::kError) return p;
      c.st = St::kBody;
      c.deadline = Clock::now() + o.body_timeout;
    }
    if (c.st == St::kBody) {
      if (c.chunked) return parse_chunked(c);
      const size_t n = std::min(c.content_left, c.in.size());
      c.req.body.append(c.in, 0, n);
      c.in.erase(0, n);
      c.content_left -= n;
      return c.content_left == 0 ? done() : Parse{};
    }
    return Parse{};
  }

  void dispatch(Conn& c) {
    c.st = St::kBusy;
    ++busy;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c.fd, nullptr);
    c.req.remote = c.remote;
    c.req.dispatched = Clock::now();
    Pool& p = o.is_fast && o.is_fast(c.req) ? fast : pool;
    {
      std::lock_guard<std::mutex> l(p.mu);
      p.q.push_back(&c);
    }
    p.cv.notify_one();
  }

  // Parses and dispatches or refuses; the connection may be closed on return.
  void advance(Conn& c) {
    const Parse p = parse(c);
    if (p.kind == Parse::kDone) {
      dispatch(c);
    } else if (p.kind == Parse::kError) {
      // A refused Content-Length body is drained (so the client sees the 413); anything else closes.
      size_t drain = 0;
      if (p.status == 413) drain = c.chunked ? SIZE_MAX : c.content_left - std::min(c.content_left, c.in.size());
      refuse(c, p.status, p.message, drain);
    }
  }

  void on_readable(Conn& c) {
    char buf[65536];
    for (int rounds = 0; rounds < 16; ++rounds) {
      const ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
      if (n == 0) {
        close_conn(c.fd);
        return;
      }
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        close_conn(c.fd);
        return;
      }
      if (c.st == St::kDrain) {
        const size_t k = static_cast<size_t>(n);
        c.drain_left = c.drain_left == SIZE_MAX ? SIZE_MAX : c.drain_left - std::min(c.drain_left, k);
        if (c.drain_left == 0) {
          close_conn(c.fd);
          return;
        }
        continue;
      }
      c.in.append(buf, static_cast<size_t>(n));
      if (c.st == St::kIdle || c.st == St::kHeaders || c.st == St::kBody) {
        const int fd = c.fd;
        advance(c);
        if (!conns.count(fd) || c.st == St::kBusy || c.st == St::kDrain) return;
      }
    }
  }

  void on_accept() {
    for (;;) {
      sockaddr_storage addr{};
      socklen_t len = sizeof(addr);
      const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE) {  // pause accepting (the listener would stay readable)
          log::warn("serve: accept: out of file descriptors; pausing accept for 100 ms");
          ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
          accept_paused_until = Clock::now() + 100ms;
        }
        return;
      }
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      char host[NI_MAXHOST] = "?";
      ::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof(host), nullptr, 0, NI_NUMERICHOST);
      c->remote = host;
      c->deadline = Clock::now() + o.idle_timeout;
      if (static_cast<int>(conns.size()) >= o.max_connections) {
        send_error(*c, 503, strcat("too many open connections (limit ", o.max_connections, ")"));
        ::close(fd);
        continue;
      }
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
      conns.emplace(fd, std::move(c));
    }
  }

  void take_returned() {
    std::vector<Conn*> back;
    {
      std::lock_guard<std::mutex> l(ret_mu);
      back.swap(returned);
    }
    for (Conn* c : back) {
      --busy;
      if (c->close_after || stopping) {
        close_conn(c->fd);
        continue;
      }
      reset_for_next(*c);
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = c->fd;
      ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, c->fd, &ev);
      if (!c->in.empty()) advance(*c);  // a pipelined request
    }
  }

  void expire(Clock::time_point now) {
    std::vector<int> idle, late, drained;
    for (auto& [fd, c] : conns) {
      if (c->st == St::kBusy || now < c->deadline) continue;
      if (c->st == St::kIdle)
        idle.push_back(fd);
      else if (c->st == St::kDrain)
        drained.push_back(fd);
      else
        late.push_back(fd);
    }
    for (int fd : idle) close_conn(fd);
    for (int fd : drained) close_conn(fd);
    for (int fd : late) {
      Conn& c = *conns.at(fd);
      const bool headers = c.st == St::kHeaders;
      send_error(c, 408,
                 headers ? strcat("request headers not received within ", o.header_timeout.count(), " ms")
                         : strcat("request body not received within ", o.body_timeout.count(), " ms"));
      close_conn(fd);
    }
  }

  // Runs on a worker: the handler, then the response.
  void serve(Conn& c) {
    Request& req = c.req;
    req.handled = Clock::now();
    Response res;
    try {
      o.handler(req, res);
    } catch (const std::exception& e) {
      res = Response{};
      res.status = 500;
      res.set_content(error_body(500, strcat("internal error: ", e.what())), "application/json");
    }
    ++c.served;
    bool keep = c.keep_alive && !stopping && c.served < o.max_keepalive_requests;
    if (!res.provider) {
      // Counted before it is sent: a client that has its response sees it in the metrics.
      if (o.on_complete) o.on_complete(req, res);
      std::string s = head_of(res, keep, false);
      s += res.body;
      if (!send_all(c.fd, s.data(), s.size(), o.write_timeout)) res.write_failed = true;
    } else {
      const std::string h = head_of(res, keep, true);
      ChunkSink sink(c.fd, o.write_timeout);
      bool ok = send_all(c.fd, h.data(), h.size(), o.write_timeout);
      if (ok) {
        try {
          ok = res.provider(sink);
        } catch (const std::exception& e) {
          log::error("serve: stream failed: ", e.what());
          ok = false;
        }
      }
      if (ok && !sink.finished()) sink.done();
      ok = ok && !sink.failed();
      if (res.release) res.release(ok);
      if (!ok) res.write_failed = true;
      if (o.on_complete) o.on_complete(req, res);
    }
    c.close_after = !keep || res.write_failed;
    {
      std::lock_guard<std::mutex> l(ret_mu);
      returned.push_back(&c);
    }
    wake();
  }

  void work(Pool& p) {
    for (;;) {
      Conn* c = nullptr;
      {
        std::unique_lock<std::mutex> l(p.mu);
        p.cv.wait(l, [&] { return p.quit || !p.q.empty(); });
        if (p.q.empty()) return;
        c = p.q.front();
        p.q.pop_front();
      }
      serve(*c);
    }
  }
};

Server::Server(Options opts) : impl_(std::make_unique<Impl>()) {
  impl_->o = std::move(opts);
}

Server::~Server() {
  stop();
  auto& im = *impl_;
  for (auto& [fd, c] : im.conns) ::close(fd);
  if (im.listen_fd >= 0) ::close(im.listen_fd);
  if (im.epoll_fd >= 0) ::close(im.epoll_fd);
  if (im.wake_fd >= 0) ::close(im.wake_fd);
}

int Server::bind() {
  auto& im = *impl_;
  // Many concurrent clients need many descriptors: raise the soft limit to the hard one.
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, 1 << 16);
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(im.o.port);
  const std::string where = strcat(im.o.host, ":", im.o.port == 0 ? std::string("(any port)") : port);
  if (::getaddrinfo(im.o.host.c_str(), port.c_str(), &hints, &res) != 0 || !res)
    throw IoError("serve", strcat("cannot bind ", where, " (unknown host)"));
  int fd = -1;
  for (addrinfo* a = res; a; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, im.o.backlog) == 0) break;
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  if (fd < 0) throw IoError("serve", strcat("cannot bind ", where, " (in use, or not a local address?)"));
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int bound = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                               : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  im.listen_fd = fd;
  im.epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  im.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (im.epoll_fd < 0 || im.wake_fd < 0) throw IoError("serve", strcat("epoll/eventfd: ", std::strerror(errno)));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = im.listen_fd;
  ::epoll_ctl(im.epoll_fd, EPOLL_CTL_ADD, im.listen_fd, &ev);
  ev.data.fd = im.wake_fd;
  ::epoll_ctl(im.epoll_fd, EPOLL_CTL_ADD, im.wake_fd, &ev);
  return bound;
}

void Server::run() {
  auto& im = *impl_;
  if (im.listen_fd < 0) throw IoError("serve", "run() before bind()");
  for (int i = 0; i < std::max(1, im.o.workers); ++i) im.pool.threads.emplace_back([&im] { im.work(im.pool); });
  for (int i = 0; i < std::max(1, im.o.fast_workers); ++i) im.fast.threads.emplace_back([&im] { im.work(im.fast); });
  epoll_event evs[256];
  auto next_scan = Clock::now();
  bool listening = true;
  while (true) {
    if (im.stopping) {
      if (listening) {
        ::epoll_ctl(im.epoll_fd, EPOLL_CTL_DEL, im.listen_fd, nullptr);
        ::close(im.listen_fd);
        im.listen_fd = -1;
        listening = false;
        std::vector<int> idle;
        for (auto& [fd, c] : im.conns)
          if (c->st != St::kBusy) idle.push_back(fd);
        for (int fd : idle) im.close_conn(fd);
      }
      if (im.busy == 0) break;
    }
    const int n = ::epoll_wait(im.epoll_fd, evs, 256, 100);
    for (int i = 0; i < n; ++i) {
      const int fd = evs[i].data.fd;
      if (fd == im.listen_fd) {
        im.on_accept();
      } else if (fd == im.wake_fd) {
        uint64_t v;
        [[maybe_unused]] const ssize_t r = ::read(im.wake_fd, &v, sizeof(v));
      } else if (auto it = im.conns.find(fd); it != im.conns.end() && it->second->st != St::kBusy) {
        im.on_readable(*it->second);
      }
    }
    im.take_returned();
    const auto now = Clock::now();
    if (listening && im.accept_paused_until != Clock::time_point{} && now >= im.accept_paused_until) {
      im.accept_paused_until = {};
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = im.listen_fd;
      ::epoll_ctl(im.epoll_fd, EPOLL_CTL_ADD, im.listen_fd, &ev);
    }
    if (now >= next_scan) {
      im.expire(now);
      next_scan = now + 100ms;
    }
  }
  for (Impl::Pool* p : {&im.pool, &im.fast}) {
    {
      std::lock_guard<std::mutex> l(p->mu);
      p->quit = true;
    }
    p->cv.notify_all();
    for (auto& t : p->threads) t.join();
    p->threads.clear();
  }
  std::vector<int> rest;
  for (auto& [fd, c] : im.conns) rest.push_back(fd);
  for (int fd : rest) im.close_conn(fd);
}

void Server::stop() {
  impl_->stopping = true;
  impl_->wake();
}

int64_t Server::queued() const {
  std::lock_guard<std::mutex> l(impl_->pool.mu);
  return static_cast<int64_t>(impl_->pool.q.size());
}

}  // namespace trinity::server::http
