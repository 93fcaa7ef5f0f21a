// AgentServer: per-run keys over one loopback OpenAI server (see agent_server.h).
#include "explorer/agent_server.h"

#include <random>

#include "core/log.h"

namespace trinity::explorer {

namespace {

// 32 hex digits from the OS's random source.
std::string new_key() {
  static std::mutex mu;
  static std::random_device rd;
  std::lock_guard<std::mutex> l(mu);
  static const char* hex = "0123456789abcdef";
  std::string k = "trinity-run-";
  for (int i = 0; i < 8; ++i) {
    uint32_t v = rd();
    for (int j = 0; j < 4; ++j, v >>= 8) k += hex[v & 0xf], k += hex[(v >> 4) & 0xf];
  }
  return k;
}

class Endpoint : public workflow::OpenAIEndpoint {
 public:
  explicit Endpoint(std::weak_ptr<AgentServer> s) : server_(std::move(s)) {}
  ~Endpoint() override {
    if (auto s = server_.lock()) s->close(api_key);
  }

 private:
  std::weak_ptr<AgentServer> server_;
};

}  // namespace

AgentServer::AgentServer(std::shared_ptr<engine::Engine> engine, std::shared_ptr<const tok::ChatFormatter> chat,
                         std::vector<int32_t> stop_ids, std::string model_name)
    : model_name_(std::move(model_name)) {
  server::ServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.model_name = model_name_;
  o.any_model = true;
  o.threads = 64;
  o.access_log = false;
  o.recording_for_key = [this](const std::string& key) { return lookup(key); };
  std::shared_ptr<const tok::Tokenizer> tok(chat, &chat->tokenizer());
  server_ =
      std::make_unique<server::Server>(std::move(engine), std::move(tok), std::move(chat), std::move(stop_ids), o);
  port_ = server_->bind();
  thread_ = std::thread([this] {
    try {
      server_->run();
    } catch (const std::exception& e) {
      log::error("explorer: the agent endpoint stopped: ", e.what());
    }
  });
  log::info("explorer: agent endpoint on http://127.0.0.1:", port_, "/v1 (one API key per run)");
}

AgentServer::~AgentServer() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::optional<server::Recording> AgentServer::lookup(const std::string& key) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = keys_.find(key);
  if (it == keys_.end()) return std::nullopt;
  return it->second;
}

std::unique_ptr<workflow::OpenAIEndpoint> AgentServer::open(std::shared_ptr<const engine::SamplingParams> defaults) {
  auto ep = std::make_unique<Endpoint>(weak_from_this());
  ep->api_key = new_key();
  ep->base_url = strcat("http://127.0.0.1:", port_, "/v1");
  ep->model = model_name_;
  ep->history = std::make_shared<tok::ChatHistory>();
  server::Recording rec;
  rec.history = ep->history;
  rec.defaults = std::move(defaults);
  std::lock_guard<std::mutex> l(mu_);
  keys_[ep->api_key] = std::move(rec);
  return ep;
}

void AgentServer::close(const std::string& key) {
  {
    std::lock_guard<std::mutex> l(mu_);
    keys_.erase(key);
  }
  server_->cancel_key(key);
}

size_t AgentServer::open_keys() const {
  std::lock_guard<std::mutex> l(mu_);
  return keys_.size();
}

}  // namespace trinity::explorer
