// ExternalClient (model.external_model) against a fake OpenAI API on loopback: the request it sends
// (model, messages, temperature, max_completion_tokens, n, Bearer key), samples with dummy tokens and
// usage metrics, choices asked again when an API returns fewer than n, HTTP errors naming URL, status
// and message, retries, cancellation of a request in flight, the unsupported token-level calls, the
// environment variables and the tokenizer fallback.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/fake_openai.h"
#include "explorer/external_client.h"
#include "tokenizer/model_files.h"

namespace trinity::explorer {
namespace {

using nlohmann::json;
using test::chat_completion;
using test::FakeOpenAI;

std::shared_ptr<const ExternalModel> make_model(const std::string& base_url, const std::string& tok_dir = "") {
  ExternalModelOptions o;
  o.base_url = base_url;
  o.api_key = "sk-test";
  o.model_name = "gpt-test";
  o.defaults.temperature = 0.7;
  o.defaults.max_tokens = 17;
  o.timeout_s = 30;
  o.retry_backoff_s = 0.01;
  o.max_model_len = 64;
  return std::make_shared<const ExternalModel>(o, tok_dir);
}

std::string what(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ExternalClient, ChatSendsTheRequestAndReturnsTextWithDummyTokens) {
  FakeOpenAI api([](const json&) { return std::make_pair(200, chat_completion({"4", "5"}, "stop", 9, 2)); });
  ExternalClient client(make_model(api.base_url()), nullptr);
  const json msgs =
      json::array({{{"role", "system"}, {"content", "be brief"}}, {{"role", "user"}, {"content", "2+2="}}});
  workflow::GenOptions opt;
  opt.temperature = 0.3;
  opt.n = 2;
  const auto samples = client.chat(msgs.dump(), opt);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].text, "4");
  EXPECT_EQ(samples[1].text, "5");
  for (const auto& s : samples) {
    EXPECT_EQ(s.finish_reason, "stop");
    EXPECT_EQ(s.prompt_ids, std::vector<int32_t>{0});
    EXPECT_EQ(s.ids, std::vector<int32_t>{0});
    EXPECT_EQ(s.logprobs, std::vector<float>{0.0f});
    EXPECT_EQ(s.model_version, 0);
    EXPECT_DOUBLE_EQ(s.metrics.at("usage/prompt_tokens"), 9);
    EXPECT_DOUBLE_EQ(s.metrics.at("usage/completion_tokens"), 2);
    EXPECT_DOUBLE_EQ(s.metrics.at("usage/total_tokens"), 11);
  }
  const auto reqs = api.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].authorization, "Bearer sk-test");
  const json& b = reqs[0].body;
  EXPECT_EQ(b["model"], "gpt-test");
  EXPECT_EQ(b["messages"], msgs);
  EXPECT_DOUBLE_EQ(b["temperature"].get<double>(), 0.3);
  EXPECT_EQ(b["max_completion_tokens"], 17);  // the model's default (model.max_response_tokens)
  EXPECT_EQ(b["n"], 2);
  EXPECT_FALSE(b.contains("stop"));
  EXPECT_EQ(client.max_model_len(), 64);
  EXPECT_TRUE(client.eos_ids().empty());
}

TEST(ExternalClient, GenerateSendsOneUserMessageWithTheTasksRolloutArgs) {
  FakeOpenAI api([](const json&) { return std::make_pair(200, chat_completion({"3"}, "length")); });
  buffer::Task task;
  task.rollout_args.temperature = 0.0;
  task.rollout_args.max_tokens = 5;
  ExternalClient client(make_model(api.base_url()), &task);
  workflow::GenOptions opt;
  opt.stop = {"\n"};
  const auto samples = client.generate("1+2=", opt);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].finish_reason, "length");
  const json b = api.requests().at(0).body;
  EXPECT_EQ(b["messages"], json::parse(R"([{"role": "user", "content": "1+2="}])"));
  EXPECT_DOUBLE_EQ(b["temperature"].get<double>(), 0.0);
  EXPECT_EQ(b["max_completion_tokens"], 5);
  EXPECT_EQ(b["n"], 1);
  EXPECT_EQ(b["stop"], json::array({"\n"}));
}

TEST(ExternalClient, AnApiThatIgnoresNIsAskedAgainForTheRest) {
  FakeOpenAI api([](const json&) { return std::make_pair(200, chat_completion({"x"})); });
  ExternalClient client(make_model(api.base_url()), nullptr);
  workflow::GenOptions opt;
  opt.n = 3;
  EXPECT_EQ(client.chat(R"([{"role": "user", "content": "hi"}])", opt).size(), 3u);
  const auto reqs = api.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].body["n"], 3);
  EXPECT_EQ(reqs[1].body["n"], 2);
  EXPECT_EQ(reqs[2].body["n"], 1);
}

TEST(ExternalClient, HttpErrorsNameUrlStatusAndTheApisMessage) {
  FakeOpenAI api([](const json&) {
    return std::make_pair(401, std::string(R"({"error": {"message": "Incorrect API key provided", "type": "auth"}})"));
  });
  ExternalClient client(make_model(api.base_url()), nullptr);
  const std::string e = what([&] { client.generate("hi", {}); });
  EXPECT_EQ(e.rfind("[explorer] external_model: POST " + api.base_url() +
                        "/chat/completions returned HTTP 401: "
                        "Incorrect API key provided",
                    0),
            0u)
      << e;
  EXPECT_EQ(e.find("sk-test"), std::string::npos) << "the key must not appear in errors: " << e;
  EXPECT_EQ(api.requests().size(), 1u);  // a 401 is not retried

  FakeOpenAI bad([](const json&) { return std::make_pair(200, std::string(R"({"object": "error"})")); });
  ExternalClient c2(make_model(bad.base_url()), nullptr);
  EXPECT_NE(what([&] { c2.generate("hi", {}); }).find("the response has no choices"), std::string::npos);
}

TEST(ExternalClient, OverloadedApiIsRetriedThenAnswers) {
  std::atomic<int> calls{0};
  FakeOpenAI api([&](const json&) {
    if (calls++ == 0) return std::make_pair(503, std::string(R"({"error": "overloaded"})"));
    return std::make_pair(200, chat_completion({"ok"}));
  });
  ExternalClient client(make_model(api.base_url()), nullptr);
  EXPECT_EQ(client.generate("hi", {}).at(0).text, "ok");
  EXPECT_EQ(api.requests().size(), 2u);

  std::atomic<int> fails{0};
  FakeOpenAI down([&](const json&) {
    ++fails;
    return std::make_pair(500, std::string(R"({"message": "boom"})"));
  });
  ExternalClient c2(make_model(down.base_url()), nullptr);
  EXPECT_NE(what([&] { c2.generate("hi", {}); }).find("returned HTTP 500: boom"), std::string::npos);
  EXPECT_EQ(fails.load(), 3);  // the first try and max_retries = 2
}

TEST(ExternalClient, NothingListeningIsAClearError) {
  // A port bound and released again: nobody listens there.
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), len), 0);
  ASSERT_EQ(::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ::close(s);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/v1";
  ExternalClient client(make_model(url), nullptr);
  const std::string e = what([&] { client.generate("hi", {}); });
  EXPECT_EQ(e.rfind("[explorer] external_model: POST " + url + "/chat/completions failed: ", 0), 0u) << e;
}

TEST(ExternalClient, CancelEndsARequestInFlight) {
  std::atomic<FakeOpenAI*> self{nullptr};
  FakeOpenAI api([&](const json&) {
    for (int i = 0; i < 500 && !(self.load() && self.load()->stopping()); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return std::make_pair(200, chat_completion({"late"}));
  });
  self.store(&api);
  ExternalClient client(make_model(api.base_url()), nullptr);
  auto f = std::async(std::launch::async, [&] { return what([&] { client.generate("hi", {}); }); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto t0 = std::chrono::steady_clock::now();
  client.cancel();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(3)), std::future_status::ready);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.5);
  EXPECT_NE(f.get().find("cancelled"), std::string::npos);
  EXPECT_TRUE(client.cancelled());
  EXPECT_NE(what([&] { client.generate("hi", {}); }).find("cancelled"), std::string::npos);
}

TEST(ExternalClient, TokenLevelCallsAreUnsupported) {
  ExternalClient client(make_model("http://127.0.0.1:9/v1"), nullptr);
  const std::string msgs = R"([{"role": "user", "content": "hi"}])";
  for (const auto& f : std::vector<std::function<void()>>{[&] {
                                                            client.generate_ids({1, 2}, {});
                                                          },
                                                          [&] {
                                                            client.logprobs({1, 2, 3});
                                                          },
                                                          [&] { client.apply_chat_template(msgs, true); },
                                                          [&] { client.render_chat_template(msgs, true); },
                                                          [&] { client.open_openai_endpoint(); }}) {
    try {
      f();
      ADD_FAILURE() << "expected UnsupportedError";
    } catch (const UnsupportedError& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind("[explorer] external_model: ", 0), 0u) << m;
      EXPECT_NE(m.find("not available through an external API"), std::string::npos) << m;
    }
  }
}

TEST(ExternalModel, OptionsFromTheEnvironment) {
  unsetenv("TRINITY_TEST_EXT_URL");
  unsetenv("TRINITY_TEST_EXT_KEY");
  std::string e = what([] { ExternalModel::options_from_env("TRINITY_TEST_EXT_URL", "TRINITY_TEST_EXT_KEY"); });
  EXPECT_EQ(
      e.rfind("[explorer] model.external_model.base_url_env: environment variable TRINITY_TEST_EXT_URL is not set", 0),
      0u)
      << e;
  setenv("TRINITY_TEST_EXT_URL", "https://api.example.com/v1//", 1);
  ExternalModelOptions o = ExternalModel::options_from_env("TRINITY_TEST_EXT_URL", "TRINITY_TEST_EXT_KEY");
  EXPECT_EQ(o.base_url, "https://api.example.com/v1");
  EXPECT_EQ(o.api_key, "EMPTY");
  setenv("TRINITY_TEST_EXT_KEY", "sk-env", 1);
  EXPECT_EQ(ExternalModel::options_from_env("TRINITY_TEST_EXT_URL", "TRINITY_TEST_EXT_KEY").api_key, "sk-env");
  setenv("TRINITY_TEST_EXT_URL", "api.example.com/v1", 1);
  e = what([] { ExternalModel::options_from_env("TRINITY_TEST_EXT_URL", "TRINITY_TEST_EXT_KEY"); });
  EXPECT_NE(e.find("is not an http:// or https:// URL"), std::string::npos) << e;
  unsetenv("TRINITY_TEST_EXT_URL");
  unsetenv("TRINITY_TEST_EXT_KEY");
}

TEST(ExternalModel, TokenizerFromALocalFolderElseBuiltInBytes) {
  const auto bytes = make_model("http://127.0.0.1:9/v1", "/nonexistent/model");
  EXPECT_EQ(bytes->tokenizer_origin(), "the built-in byte-level tokenizer");
  EXPECT_EQ(bytes->tokenizer().vocab_size(), tok::kByteVocab);
  EXPECT_EQ(bytes->tokenizer().decode(bytes->tokenizer().encode("1+2=")), "1+2=");
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("trinity-ext-tok-" + std::to_string(getpid()))).string();
  tok::write_byte_tokenizer(dir);
  const auto local = make_model("http://127.0.0.1:9/v1", dir);
  EXPECT_EQ(local->tokenizer_origin(), dir + "/tokenizer.json");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trinity::explorer
