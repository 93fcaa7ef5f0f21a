// env::Session against fake environment servers (tests/js/env_test_server.mjs): OpenEnv over WebSocket
// (reset / step / state / schema / close, error replies, malformed replies, deadlines) and over HTTP,
// and AgentGym with two field-name variants ("id" + {"id": n} vs "env_idx" + a bare int) and the guess
// mode. Every error message names the operation and the URL.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "core/timer.h"
#include "env/http_client.h"
#include "env/session.h"
#include "env/test_server.h"

namespace trinity::env {
namespace {

using nlohmann::json;
using test::NodeEnvServer;

class SessionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = std::make_unique<NodeEnvServer>(); }
  static void TearDownTestSuite() { server_.reset(); }
  void SetUp() override { ASSERT_TRUE(server_->error.empty()) << server_->error; }
  static SessionOptions opts(Protocol p, const std::string& path = "", double timeout_s = 5) {
    SessionOptions o;
    o.url = server_->http(path);
    o.protocol = p;
    o.timeout_s = timeout_s;
    return o;
  }
  static std::unique_ptr<NodeEnvServer> server_;
};
std::unique_ptr<NodeEnvServer> SessionTest::server_;

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

TEST(SessionNames, ProtocolsAndReasons) {
  EXPECT_EQ(parse_protocol("ws"), Protocol::kOpenEnvWs);
  EXPECT_EQ(parse_protocol("http"), Protocol::kOpenEnvHttp);
  EXPECT_EQ(parse_protocol("agentgym"), Protocol::kAgentGym);
  try {
    parse_protocol("grpc");
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'grpc'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("agentgym"), std::string::npos);
  }
  EXPECT_STREQ(fail_reason_name(FailReason::kConnect), "connect");
  EXPECT_STREQ(fail_reason_name(FailReason::kTimeout), "timeout");
  EXPECT_STREQ(fail_reason_name(FailReason::kClosed), "closed");
  EXPECT_STREQ(fail_reason_name(FailReason::kProtocol), "protocol");
  EXPECT_STREQ(fail_reason_name(FailReason::kServer), "server");
  EXPECT_TRUE(EnvError(FailReason::kTimeout, "x").transient());
  EXPECT_FALSE(EnvError(FailReason::kServer, "x").transient());
}

TEST_F(SessionTest, OpenEnvWsEpisode) {
  SessionOptions o = opts(Protocol::kOpenEnvWs);
  o.api_key = "secret";
  auto s = open_session(o);
  StepResult r = s->reset(R"({"seed": 7})");
  EXPECT_EQ(r.observation_text, "reset seed=7");
  EXPECT_EQ(json::parse(r.observation_json)["auth"], "Bearer secret");
  EXPECT_FALSE(r.reward.has_value());
  EXPECT_FALSE(r.done);
  EXPECT_EQ(json::parse(r.raw_json)["type"], "observation");

  r = s->step(R"({"message": "hello"})");
  EXPECT_EQ(r.observation_text, "hello");
  EXPECT_EQ(json::parse(r.observation_json)["message_length"], 5);
  ASSERT_TRUE(r.reward.has_value());
  EXPECT_NEAR(*r.reward, 0.5, 1e-12);
  EXPECT_FALSE(r.done);
  EXPECT_EQ(json::parse(s->state())["step_count"], 1);

  // An error reply is kServer, quoting message and code; the session stays usable.
  expect_env_error([&] { s->step(R"({"message": "error"})"); }, FailReason::kServer,
                   {"step on ws://127.0.0.1:", "/ws", "boom: bad action", "EXECUTION_ERROR"});
  r = s->step(R"({"message": "bye"})");
  EXPECT_TRUE(r.done);
  EXPECT_EQ(json::parse(s->state())["step_count"], 2);

  EXPECT_EQ(json::parse(s->schema())["action"]["type"], "object");
  s->close();
  s->close();
  expect_env_error([&] { s->step(R"({"message": "x"})"); }, FailReason::kClosed);
}

TEST_F(SessionTest, OpenEnvWsUrlForms) {
  for (const std::string& url : {server_->ws("/ws"), server_->ws(""), server_->http("/")}) {
    SessionOptions o = opts(Protocol::kOpenEnvWs);
    o.url = url;
    auto s = open_session(o);
    EXPECT_EQ(s->reset("").observation_text, "reset seed=none") << url;
  }
}

TEST_F(SessionTest, OpenEnvWsMalformedReplies) {
  auto s = open_session(opts(Protocol::kOpenEnvWs));
  s->reset("{}");
  expect_env_error([&] { s->step(R"({"message": "nodone"})"); }, FailReason::kProtocol, {"'done'", "nodone", "/ws"});
  expect_env_error([&] { s->step(R"({"message": "badjson"})"); }, FailReason::kProtocol, {"not JSON", "/ws"});
  expect_env_error([&] { s->step(R"({"message": "notobject"})"); }, FailReason::kProtocol, {"42"});
  // A bad argument is the caller's error, not the environment's.
  EXPECT_THROW(s->step("[1, 2]"), ValueError);
  EXPECT_THROW(s->reset("{oops"), ValueError);
}

TEST_F(SessionTest, OpenEnvWsDeadlineMakesSessionUnusable) {
  auto s = open_session(opts(Protocol::kOpenEnvWs, "", 0.3));
  s->reset("{}");
  Timer t;
  expect_env_error([&] { s->step(R"({"message": "hang"})"); }, FailReason::kTimeout,
                   {"step on ws://127.0.0.1:", "timed out after 0.3 s waiting for a reply"});
  EXPECT_LT(t.seconds(), 2.0);
  expect_env_error([&] { s->step(R"({"message": "late"})"); }, FailReason::kClosed, {"timeout during step"});
}

TEST_F(SessionTest, OpenEnvWsConnectRefused) {
  SessionOptions o = opts(Protocol::kOpenEnvWs);
  o.url = "http://127.0.0.1:" + std::to_string(test::unused_port());
  expect_env_error([&] { open_session(o); }, FailReason::kConnect, {"connect on ws://127.0.0.1:"});
}

TEST_F(SessionTest, OpenEnvHttp) {
  auto s = open_session(opts(Protocol::kOpenEnvHttp));
  StepResult r = s->reset(R"({"seed": 3})");
  EXPECT_EQ(r.observation_text, "reset seed=3");
  EXPECT_FALSE(r.reward.has_value());
  r = s->step(R"({"message": "hey"})");
  EXPECT_EQ(r.observation_text, "hey");
  EXPECT_NEAR(r.reward.value_or(-1), 0.3, 1e-12);
  EXPECT_FALSE(r.done);
  EXPECT_TRUE(s->step(R"({"message": "bye"})").done);
  EXPECT_EQ(json::parse(s->schema())["action"]["type"], "object");
  EXPECT_EQ(json::parse(s->state())["step_count"], 0);
  expect_env_error([&] { s->step(R"({"message": "error"})"); }, FailReason::kServer,
                   {"HTTP 500", "boom in step", "/step"});
  expect_env_error([&] { s->step(R"({"message": "badjson"})"); }, FailReason::kProtocol, {"not JSON"});
  expect_env_error([&] { s->step(R"({"message": "nodone"})"); }, FailReason::kProtocol, {"'done'"});
  SessionOptions quick = opts(Protocol::kOpenEnvHttp, "", 0.3);
  auto q = open_session(quick);
  expect_env_error([&] { q->step(R"({"message": "hang"})"); }, FailReason::kTimeout, {"step on http://", "0.3 s"});
  SessionOptions dead = opts(Protocol::kOpenEnvHttp);
  dead.url = "http://127.0.0.1:" + std::to_string(test::unused_port());
  expect_env_error([&] { open_session(dead); }, FailReason::kConnect, {"connect on http://127.0.0.1:"});
}

TEST_F(SessionTest, AgentGymIdVariant) {
  SessionOptions o = opts(Protocol::kAgentGym, "/ag_id");
  o.agentgym_env = "alfworld";  // id field "id", task field "game"
  auto s = open_session(o);
  StepResult r = s->reset(R"({"game": 4})");
  EXPECT_NE(r.observation_text.find("task 4"), std::string::npos) << r.observation_text;
  EXPECT_EQ(json::parse(r.observation_json)["available_actions"][0], "go");
  EXPECT_FALSE(r.done);
  EXPECT_FALSE(r.reward.has_value());
  r = s->step(R"({"action": "look"})");
  EXPECT_NE(r.observation_text.find("after look (step 1, task 4)"), std::string::npos) << r.observation_text;
  EXPECT_EQ(r.reward, 0.0);
  EXPECT_FALSE(r.done);
  r = s->step(R"({"action": "finish"})");
  EXPECT_TRUE(r.done);
  EXPECT_EQ(r.reward, 1.0);
  EXPECT_EQ(json::parse(s->state())["note"], "detail");
  EXPECT_EQ(s->schema(), "");
  expect_env_error([&] { s->step(R"({"action": "crash"})"); }, FailReason::kServer, {"env crashed", "/ag_id/step"});
  expect_env_error([&] { s->step(R"({"action": "nodone"})"); }, FailReason::kProtocol, {"'done'"});
  // "data_idx" is renamed to the server's task field.
  EXPECT_NE(s->reset(R"({"data_idx": 9})").observation_text.find("task 9"), std::string::npos);
}

TEST_F(SessionTest, AgentGymEnvIdxVariant) {
  SessionOptions o = opts(Protocol::kAgentGym, "/ag_idx");
  o.agentgym_env = "webshop";  // env_idx, session_id, a bare-int create reply, [text, null] reset reply
  auto s = open_session(o);
  StepResult r = s->reset(R"({"session_id": 2})");
  EXPECT_NE(r.observation_text.find("task 2"), std::string::npos) << r.raw_json;
  EXPECT_FALSE(r.done);
  r = s->step(R"({"action": "search[shoes]"})");
  EXPECT_NE(r.observation_text.find("after search[shoes]"), std::string::npos) << r.raw_json;
  EXPECT_EQ(json::parse(r.observation_json)["observation"], r.observation_text);
  EXPECT_TRUE(s->step(R"({"action": "finish"})").done);
  // The wrong field names are a server-side 422 (FastAPI's validation error), quoted.
  SessionOptions wrong = o;
  wrong.agentgym_env = "babyai";
  auto w = open_session(wrong);
  expect_env_error([&] { w->reset(R"({"data_idx": 1})"); }, FailReason::kServer, {"HTTP 422", "env_idx"});
}

TEST_F(SessionTest, AgentGymGuessAndClose) {
  for (const std::string prefix : {"/ag_id", "/ag_idx"}) {
    SessionOptions o = opts(Protocol::kAgentGym, prefix);
    auto s = open_session(o);  // guess: both id fields are sent
    const std::string task_field = prefix == "/ag_id" ? "game" : "session_id";
    EXPECT_NE(s->reset(json{{task_field, 1}}.dump()).observation_text.find("task 1"), std::string::npos) << prefix;
    EXPECT_NE(s->step(R"({"action": "a"})").observation_text.find("after a"), std::string::npos) << prefix;
    const auto n_closed = [&] {
      return json::parse(http_request("GET", server_->http(prefix + "/closed"), "", 5).body)["closed"].size();
    };
    const size_t before = n_closed();
    s->close();  // POST /close with the id
    s->close();
    EXPECT_EQ(n_closed(), before + 1) << prefix;
    expect_env_error([&] { s->step(R"({"action": "a"})"); }, FailReason::kClosed);
  }
  SessionOptions bad = opts(Protocol::kAgentGym, "/ag_id");
  bad.agentgym_env = "nethack";
  try {
    open_session(bad);
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'nethack'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("alfworld"), std::string::npos);
  }
}

TEST_F(SessionTest, AgentGymCreateFailures) {
  expect_env_error([&] { open_session(opts(Protocol::kAgentGym, "/nothing")); }, FailReason::kServer,
                   {"create on http://", "/nothing/create", "HTTP 404"});
  SessionOptions dead = opts(Protocol::kAgentGym);
  dead.url = "http://127.0.0.1:" + std::to_string(test::unused_port());
  expect_env_error([&] { open_session(dead); }, FailReason::kConnect, {"create on http://127.0.0.1:"});
}

}  // namespace
}  // namespace trinity::env
