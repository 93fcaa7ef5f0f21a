// The Chat page's API (docs/studio.md "Chat"): the model folders and checkpoints under the root, and
// chat with one of them -- one engine at a time, loaded on the first request that names it (a request
// for another model replaces it), answered with every sampled token's id, text and logprob.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "studio/http_util.h"
#include "studio/root.h"

namespace trinity::explorer {
struct RolloutModel;
}

namespace trinity::studio {

class Chat {
 public:
  explicit Chat(const Root& root) : root_(root) {}
  json models() const;
  // Body: {"model", "messages", "max_tokens"?, "temperature"?, "top_p"?, "seed"?}.
  json chat(const json& body);
  std::string loaded() const;

 private:
  const Root& root_;
  mutable std::mutex mu_;  // one generation / load at a time
  std::string path_;
  std::shared_ptr<const explorer::RolloutModel> model_;
};

}  // namespace trinity::studio
