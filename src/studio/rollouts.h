// The Rollouts page's API (docs/studio.md "Rollouts"): the experience buffers of a run (sqlite files
// with buffer tables, JSONL experience files in its job dir), pages of rows with filters, one row with
// every token decoded by the run's tokenizer (its latest checkpoint's, else its config's model), and
// best / worst per step. Browsers and tokenizers are cached per file.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "buffer/browse.h"
#include "studio/http_util.h"
#include "studio/root.h"
#include "studio/runs.h"

namespace trinity::tok {
class Tokenizer;
}

namespace trinity::studio {

class Rollouts {
 public:
  Rollouts(const Root& root, Runs& runs) : root_(root), runs_(runs) {}
  json sources(const std::string& run_id);
  // Query parameters: source, offset, limit, min_reward, max_reward, task, model_version, step, order.
  json page(const std::string& query);
  json one(const std::string& source, int64_t id);
  json steps(const std::string& source);

 private:
  std::shared_ptr<buffer::BufferBrowser> browser(const std::string& source, std::string* abs_path);
  std::shared_ptr<const tok::Tokenizer> tokenizer_for(const std::string& abs_path);

  const Root& root_;
  Runs& runs_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<buffer::BufferBrowser>> browsers_;
  std::map<std::string, std::shared_ptr<const tok::Tokenizer>> tokenizers_;  // by run dir
};

// The run dir (a folder with run_status.json or monitor/metrics.jsonl) at or above `path`, "" if none
// inside the root.
std::string enclosing_run_dir(const Root& root, const std::string& path);
// The model folder of a run for its tokenizer: the newest global_step_N/huggingface with a
// tokenizer.json, else the config's model.model_path; "" when neither.
std::string run_model_dir(const std::string& run_dir);

}  // namespace trinity::studio
