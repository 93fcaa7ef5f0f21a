// Per-request HTTP overhead of a running `trinity serve`: N requests to a cheap endpoint (no
// generation), over one keep-alive connection and with a fresh connection per request; prints the
// median and p99 latency of each. Usage: bench_serve_overhead PORT [N=500] [PATH=/v1/models]
// [METHOD=GET] (a POST sends a 2-byte JSON body, answered 400 without generating).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    std::perror("connect");
    std::exit(1);
  }
  const int one = 1;  // the client must not add its own Nagle delay
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

// Sends `req` and reads one Content-Length response; returns false on a broken connection.
bool roundtrip(int fd, const std::string& req) {
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) return false;
  std::string buf;
  char tmp[16384];
  for (;;) {
    const size_t he = buf.find("\r\n\r\n");
    if (he != std::string::npos) {
      size_t cl = buf.find("Content-Length: ");
      if (cl == std::string::npos) cl = buf.find("content-length: ");
      if (cl != std::string::npos && buf.size() >= he + 4 + std::stoul(buf.substr(cl + 16))) return true;
    }
    const ssize_t n = ::recv(fd, tmp, sizeof(tmp), 0);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
  }
}

void report(const char* what, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  std::printf("%-28s n %zu  median %.3f ms  p99 %.3f ms\n", what, ms.size(), ms[ms.size() / 2],
              ms[std::min(ms.size() - 1, ms.size() * 99 / 100)]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_serve_overhead PORT [N=500] [PATH=/v1/models] [METHOD=GET]\n");
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const int n = argc > 2 ? std::atoi(argv[2]) : 500;
  const std::string path = argc > 3 ? argv[3] : "/v1/models";
  const std::string method = argc > 4 ? argv[4] : "GET";
  const char* key = std::getenv("TRINITY_API_KEY");
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  if (key) req += std::string("Authorization: Bearer ") + key + "\r\n";
  if (method == "POST")
    req += "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
  else
    req += "\r\n";
  std::vector<double> keep, fresh;
  int fd = connect_to(port);
  for (int i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    if (!roundtrip(fd, req)) {
      std::fprintf(stderr, "keep-alive connection broke at request %d\n", i);
      return 1;
    }
    keep.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  ::close(fd);
  for (int i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    fd = connect_to(port);
    if (!roundtrip(fd, req)) {
      std::fprintf(stderr, "request %d on a fresh connection failed\n", i);
      return 1;
    }
    ::close(fd);
    fresh.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  const std::string label = method + " " + path;
  report((label + " keep-alive").c_str(), keep);
  report((label + " fresh conn").c_str(), fresh);
  return 0;
}
