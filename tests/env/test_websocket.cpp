// WebSocket client and HTTP client against a real Node `ws` / http server (tests/js/env_test_server.mjs):
// echo of small and large messages, fragmented replies, server pings, server close codes, deadlines,
// refused connections, rejected handshakes, a server killed mid-session, chunked / cut HTTP bodies.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <memory>

#include "core/timer.h"
#include "env/http_client.h"
#include "env/test_server.h"
#include "env/websocket.h"

namespace trinity::test {

int unused_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

}  // namespace trinity::test

namespace trinity::env {
namespace {

using test::NodeEnvServer;

class WsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = std::make_unique<NodeEnvServer>(); }
  static void TearDownTestSuite() { server_.reset(); }
  void SetUp() override { ASSERT_TRUE(server_->error.empty()) << server_->error; }
  static std::unique_ptr<NodeEnvServer> server_;
};
std::unique_ptr<NodeEnvServer> WsTest::server_;

// Runs f, expecting EnvError with `reason` and every `parts` in the message; returns the message.
template <typename F>
std::string expect_env_error(F&& f, FailReason reason, std::initializer_list<std::string> parts = {}) {
  try {
    f();
  } catch (const EnvError& e) {
    EXPECT_EQ(fail_reason_name(e.reason()), std::string(fail_reason_name(reason))) << e.what();
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << "'" << p << "' not in: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no EnvError thrown";
  return "";
}

TEST_F(WsTest, EchoSmallAndLarge) {
  auto ws = WebSocket::connect(server_->ws("/echo"), 5);
  ws->send_text("hello", 5);
  EXPECT_EQ(ws->receive_text(5), "hello");
  ws->send_text("", 5);
  EXPECT_EQ(ws->receive_text(5), "");
  for (size_t n : {size_t(126), size_t(70000), size_t(3) << 20}) {
    std::string big(n, 'x');
    for (size_t i = 0; i < n; i += 97) big[i] = static_cast<char>('a' + i % 26);
    ws->send_text(big, 10);
    EXPECT_EQ(ws->receive_text(10), big) << n;
  }
  ws->close();
  EXPECT_FALSE(ws->is_open());
  ws->close();  // twice is fine
  expect_env_error([&] { ws->send_text("x", 1); }, FailReason::kClosed);
}

TEST_F(WsTest, HttpSchemeAccepted) {
  auto ws = WebSocket::connect(server_->http("/echo"), 5);
  EXPECT_EQ(ws->url().rfind("ws://", 0), 0u);
  ws->send_text("via http://", 5);
  EXPECT_EQ(ws->receive_text(5), "via http://");
}

TEST_F(WsTest, FragmentedReplyReassembled) {
  auto ws = WebSocket::connect(server_->ws("/fragment"), 5);
  ws->send_text("abcdefghijklmnop", 5);
  EXPECT_EQ(ws->receive_text(5), "abcdefghijklmnop");
  ws->send_text("0123456789", 5);
  EXPECT_EQ(ws->receive_text(5), "0123456789");
}

TEST_F(WsTest, ServerPingAnswered) {
  auto ws = WebSocket::connect(server_->ws("/ping"), 5);
  ws->send_text("p1", 5);
  // The server pings with "p1" and only replies once our pong carrying "p1" arrived.
  EXPECT_EQ(ws->receive_text(5), "pong:p1");
}

TEST_F(WsTest, ServerCloseCarriesCodeAndReason) {
  auto ws = WebSocket::connect(server_->ws("/close"), 5);
  ws->send_text("close 4001 episode over", 5);
  expect_env_error([&] { ws->receive_text(5); }, FailReason::kClosed, {"4001", "episode over", server_->ws("/close")});
  EXPECT_FALSE(ws->is_open());
}

TEST_F(WsTest, SilentServerTimesOutQuickly) {
  auto ws = WebSocket::connect(server_->ws("/silent"), 5);
  ws->send_text("anyone?", 5);
  Timer t;
  expect_env_error([&] { ws->receive_text(0.3); }, FailReason::kTimeout,
                   {"timed out after 0.3 s", server_->ws("/silent")});
  EXPECT_GE(t.seconds(), 0.29);
  EXPECT_LT(t.seconds(), 2.0);
}

TEST_F(WsTest, MessageOverLimitIsProtocolError) {
  auto ws = WebSocket::connect(server_->ws("/echo"), 5);
  ws->set_max_message_bytes(1000);
  ws->send_text(std::string(5000, 'y'), 5);
  expect_env_error([&] { ws->receive_text(5); }, FailReason::kProtocol, {"1000"});
  // Fragments count together: each fragment is small, the message is not.
  auto wf = WebSocket::connect(server_->ws("/fragment"), 5);
  wf->set_max_message_bytes(10);
  wf->send_text("0123456789abcdef", 5);
  expect_env_error([&] { wf->receive_text(5); }, FailReason::kProtocol);
}

TEST_F(WsTest, DestroyedConnectionIsClosed) {
  auto ws = WebSocket::connect(server_->ws("/destroy"), 5);
  ws->send_text("bye", 5);
  expect_env_error([&] { ws->receive_text(5); }, FailReason::kClosed);
}

TEST_F(WsTest, HandshakeFailures) {
  expect_env_error([&] { WebSocket::connect(server_->ws("/reject"), 5); }, FailReason::kConnect, {"403", "forbidden"});
  expect_env_error([&] { WebSocket::connect(server_->ws("/badaccept"), 5); }, FailReason::kProtocol,
                   {"Sec-WebSocket-Accept"});
  const std::string refused = "ws://127.0.0.1:" + std::to_string(test::unused_port()) + "/ws";
  expect_env_error([&] { WebSocket::connect(refused, 5); }, FailReason::kConnect, {refused});
}

TEST_F(WsTest, ConnectDeadline) {
  // A non-routable address (RFC 5737 TEST-NET-1): the SYN goes unanswered, or the host is unreachable
  // at once in a sandbox without a route; either way the call returns within the deadline.
  Timer t;
  try {
    WebSocket::connect("ws://192.0.2.1:9/ws", 0.3);
    ADD_FAILURE() << "connected to TEST-NET-1";
  } catch (const EnvError& e) {
    EXPECT_TRUE(e.reason() == FailReason::kTimeout || e.reason() == FailReason::kConnect) << e.what();
  }
  EXPECT_LT(t.seconds(), 2.0);
}

TEST(WsKill, ServerKilledMidSession) {
  NodeEnvServer server;
  ASSERT_TRUE(server.error.empty()) << server.error;
  auto ws = WebSocket::connect(server.ws("/silent"), 5);
  ws->send_text("are you there", 5);
  server.kill();
  Timer t;
  expect_env_error([&] { ws->receive_text(5); }, FailReason::kClosed, {server.ws("/silent")});
  EXPECT_LT(t.seconds(), 2.0);
  ws->close();  // never throws on a dead server
}

TEST_F(WsTest, HttpClientBodies) {
  HttpResponse r = http_request("GET", server_->http("/http/chunked"), "", 5);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("transfer-encoding"), "chunked");
  EXPECT_EQ(r.body, "hello chunked world");
  r = http_request("GET", server_->http("/http/big?n=3000000"), "", 10);
  EXPECT_EQ(r.body, std::string(3000000, 'x'));  // Content-Length body, read in many pieces
  r = http_request("POST", server_->http("/http/echo"), R"({"a":1})", 5, {{"Authorization", "Bearer k"}});
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find(R"(\"a\":1)"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("Bearer k"), std::string::npos) << r.body;
  r = http_request("GET", server_->http("/http/teapot"), "", 5);
  EXPECT_EQ(r.status, 418);  // not thrown: the caller decides
  EXPECT_NE(r.body.find("stout"), std::string::npos);
}

TEST_F(WsTest, HttpClientFailures) {
  Timer t;
  expect_env_error([&] { http_request("GET", server_->http("/http/hang"), "", 0.3); }, FailReason::kTimeout,
                   {"0.3 s", "/http/hang"});
  EXPECT_LT(t.seconds(), 2.0);
  expect_env_error([&] { http_request("GET", server_->http("/http/cut"), "", 5); }, FailReason::kClosed, {"/http/cut"});
  const std::string refused = "http://127.0.0.1:" + std::to_string(test::unused_port()) + "/x";
  expect_env_error([&] { http_request("GET", refused, "", 5); }, FailReason::kConnect, {refused});
}

}  // namespace
}  // namespace trinity::env
