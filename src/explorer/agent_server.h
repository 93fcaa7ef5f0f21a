// AgentServer: the loopback OpenAI endpoint the explorer gives agents (command_workflow, Trinity's
// enable_openai_api). One server per rollout model, started on first use on 127.0.0.1 at a free
// port and serving on its own thread; it is `trinity serve`'s server over the explorer's engine,
// so weight swaps follow the engine's policy (a request in flight finishes on the weights it
// started with). Each run opens its own key: the key selects the run's history (calls recorded,
// assistant turns spliced) and its sampling defaults; a key that was closed answers 401.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "engine/engine.h"
#include "server/server.h"
#include "workflow/model_client.h"

namespace trinity::explorer {

class AgentServer : public std::enable_shared_from_this<AgentServer> {
 public:
  // Binds 127.0.0.1:0 and starts serving. IoError when it cannot bind.
  AgentServer(std::shared_ptr<engine::Engine> engine, std::shared_ptr<const tok::ChatFormatter> chat,
              std::vector<int32_t> stop_ids, std::string model_name);
  ~AgentServer();  // stops the server and joins its thread
  AgentServer(const AgentServer&) = delete;
  AgentServer& operator=(const AgentServer&) = delete;

  // A new key with an empty history; `defaults` are the run's sampling settings.
  std::unique_ptr<workflow::OpenAIEndpoint> open(std::shared_ptr<const engine::SamplingParams> defaults);
  // Forgets `key` (later requests get 401) and cancels its requests in flight. Idempotent.
  void close(const std::string& key);
  int port() const { return port_; }
  size_t open_keys() const;

 private:
  std::optional<server::Recording> lookup(const std::string& key) const;

  mutable std::mutex mu_;
  std::map<std::string, server::Recording> keys_;
  std::unique_ptr<server::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::string model_name_;
};

}  // namespace trinity::explorer
