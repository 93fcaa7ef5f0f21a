// A fake OpenAI-compatible chat API on loopback (cpp-httplib) for tests of model.external_model: it
// records every POST /v1/chat/completions (Authorization header and JSON body) and answers with what
// the test's handler returns. Link PkgConfig::HTTPLIB and nlohmann_json.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace trinity::test {

class FakeOpenAI {
 public:
  struct Request {
    std::string authorization;
    nlohmann::json body;
  };
  // (status, response body) for a request body.
  using Handler = std::function<std::pair<int, std::string>(const nlohmann::json& body)>;

  explicit FakeOpenAI(Handler handler) : handler_(std::move(handler)) {
    svr_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
      {
        std::lock_guard<std::mutex> l(mu_);
        requests_.push_back({req.get_header_value("Authorization"), body});
      }
      auto [status, text] = handler_(body);
      res.status = status;
      res.set_content(text, "application/json");
    });
    port_ = svr_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    for (int i = 0; i < 500 && !svr_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ~FakeOpenAI() {
    stopping_.store(true);
    svr_.stop();
    thread_.join();
  }
  FakeOpenAI(const FakeOpenAI&) = delete;
  FakeOpenAI& operator=(const FakeOpenAI&) = delete;

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  std::vector<Request> requests() const {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }
  // For slow handlers: true once the server is shutting down.
  bool stopping() const { return stopping_.load(); }

 private:
  Handler handler_;
  httplib::Server svr_;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<Request> requests_;
  std::atomic<bool> stopping_{false};
};

// A chat completion with one choice per text (finish_reason `finish`) and a usage block.
inline std::string chat_completion(const std::vector<std::string>& texts, const std::string& finish = "stop",
                                   int prompt_tokens = 11, int completion_tokens = 3) {
  nlohmann::json choices = nlohmann::json::array();
  for (size_t i = 0; i < texts.size(); ++i)
    choices.push_back(
        {{"index", i}, {"message", {{"role", "assistant"}, {"content", texts[i]}}}, {"finish_reason", finish}});
  return nlohmann::json{{"id", "chatcmpl-test"},
                        {"object", "chat.completion"},
                        {"model", "fake"},
                        {"choices", choices},
                        {"usage",
                         {{"prompt_tokens", prompt_tokens},
                          {"completion_tokens", completion_tokens},
                          {"total_tokens", prompt_tokens + completion_tokens}}}}
      .dump();
}

}  // namespace trinity::test
