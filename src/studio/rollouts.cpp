// Rollouts API (rollouts.h).
#include "studio/rollouts.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "buffer/sqlite_storage.h"
#include "config/config.h"
#include "core/error.h"
#include "core/file.h"
#include "core/log.h"
#include "launcher/run_status.h"
#include "tokenizer/tokenizer.h"

namespace trinity::studio {

namespace fs = std::filesystem;

namespace {

json num_or_null(double x) {
  return std::isfinite(x) ? json(x) : json(nullptr);
}

json parsed_or_null(const std::string& text) {
  if (text.empty()) return nullptr;
  json j = json::parse(text, nullptr, false);
  return j.is_discarded() ? json(text) : j;
}

std::optional<double> opt_double(const std::string& query, const char* name) {
  const std::string v = query_param(query, name);
  if (v.empty()) return std::nullopt;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || *end != '\0' || !std::isfinite(x))
    throw HttpError{400, strcat("query parameter '", name, "' must be a number, got '", v, "'"), "invalid_value", name};
  return x;
}

json row_json(int64_t id, const buffer::Experience& e, const tok::Tokenizer* tk) {
  json j;
  j["id"] = id;
  j["eid"] = e.eid.uid();
  j["step"] = e.eid.batch;
  j["task"] = e.eid.task;
  j["run"] = e.eid.run;
  j["model_version"] = e.model_version;
  j["reward"] = e.reward ? num_or_null(*e.reward) : json(nullptr);
  j["prompt_length"] = e.prompt_length;
  j["response_length"] = e.response_length();
  std::string prompt = e.prompt_text, response = e.response_text;
  if (tk && prompt.empty() && e.prompt_length > 0)
    prompt = tk->decode(std::span<const int32_t>(e.tokens.data(), static_cast<size_t>(e.prompt_length)));
  if (tk && response.empty() && e.response_length() > 0)
    response = tk->decode(
        std::span<const int32_t>(e.tokens.data() + e.prompt_length, static_cast<size_t>(e.response_length())));
  j["prompt_text"] = prompt;
  j["response_text"] = response;
  json m = json::object();
  for (const auto& [k, v] : e.metrics) m[k] = num_or_null(v);
  j["metrics"] = m;
  j["info"] = e.info.empty() ? json::object() : parsed_or_null(e.info);
  return j;
}

}  // namespace

std::string enclosing_run_dir(const Root& root, const std::string& path) {
  for (fs::path p = fs::path(path).parent_path(); root.contains(p.string()); p = p.parent_path()) {
    std::error_code ec;
    if (fs::exists(p / launcher::kRunStatusFile, ec) || fs::exists(p / "monitor" / "metrics.jsonl", ec))
      return p.string();
    if (p == p.parent_path()) break;
  }
  return "";
}

std::string run_model_dir(const std::string& run_dir) {
  int64_t best = -1;
  std::string dir;
  std::error_code ec;
  for (fs::directory_iterator it(run_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (!n.starts_with("global_step_")) continue;
    const int64_t step = std::strtoll(n.c_str() + 12, nullptr, 10);
    const fs::path hf = it->path() / "huggingface";
    if (step > best && fs::exists(hf / "tokenizer.json", ec)) best = step, dir = hf.string();
  }
  if (!dir.empty()) return dir;
  const auto st = launcher::read_run_status(run_dir);
  if (st && !st->config.empty() && file::exists(st->config)) {
    try {
      const auto r = config::load_config(st->config, st->sets);
      for (const auto& c : r.stages)
        if (fs::weakly_canonical(c.job_dir()) == fs::weakly_canonical(run_dir)) return c.model.model_path;
      return r.config.model.model_path;
    } catch (const Error&) {
    }
  }
  return "";
}

std::shared_ptr<buffer::BufferBrowser> Rollouts::browser(const std::string& source, std::string* abs_path) {
  const auto hash = source.find('#');
  const std::string rel = source.substr(0, hash);
  const std::string table = hash == std::string::npos ? "" : source.substr(hash + 1);
  const std::string abs = root_.resolve(rel, "source");
  if (!file::exists(abs)) throw HttpError{404, strcat("no buffer file '", rel, "'"), "not_found", "source"};
  *abs_path = abs;
  const std::string key = abs + "#" + table;
  std::lock_guard<std::mutex> l(mu_);
  auto& b = browsers_[key];
  if (!b) {
    try {
      b = buffer::open_browser(abs, table);
    } catch (const Error& e) {
      browsers_.erase(key);
      throw HttpError{400, e.what(), "invalid_source", "source"};
    }
  }
  return b;
}

std::shared_ptr<const tok::Tokenizer> Rollouts::tokenizer_for(const std::string& abs_path) {
  const std::string run = enclosing_run_dir(root_, abs_path);
  if (run.empty()) return nullptr;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (auto it = tokenizers_.find(run); it != tokenizers_.end()) return it->second;
  }
  std::shared_ptr<const tok::Tokenizer> t;
  const std::string dir = run_model_dir(run);
  if (!dir.empty()) {
    try {
      t = std::make_shared<const tok::Tokenizer>(tok::Tokenizer::load(dir));
    } catch (const Error& e) {
      log::warn("studio: no tokenizer for ", run, ": ", e.what());
    }
  }
  std::lock_guard<std::mutex> l(mu_);
  tokenizers_[run] = t;
  return t;
}

json Rollouts::sources(const std::string& run_id) {
  const std::string dir = runs_.run_dir(run_id);
  json out = json::array();
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (it->is_directory(ec)) {
      if (n.starts_with("global_step_") || n == "monitor" || it.depth() > 2) it.disable_recursion_pending();
      continue;
    }
    const std::string p = it->path().string();
    try {
      if (n.ends_with(".db") || n.ends_with(".sqlite")) {
        for (const auto& t : buffer::sqlite_buffer_names(p)) {
          const std::string src = root_.relative(p) + "#" + t;
          std::string abs;
          out.push_back({{"source", src}, {"kind", "sqlite"}, {"count", browser(src, &abs)->count()}});
        }
      } else if (n.ends_with(".jsonl") && n != "studio_run.log") {
        const std::string src = root_.relative(p);
        std::string abs;
        out.push_back({{"source", src}, {"kind", "jsonl"}, {"count", browser(src, &abs)->count()}});
      }
    } catch (const Error&) {  // not a buffer
    } catch (const HttpError&) {
    }
  }
  return {{"sources", out}};
}

json Rollouts::page(const std::string& query) {
  std::string abs;
  auto b = browser(query_param(query, "source"), &abs);
  buffer::BrowseFilter f;
  f.min_reward = opt_double(query, "min_reward");
  f.max_reward = opt_double(query, "max_reward");
  if (has_query_param(query, "model_version") && !query_param(query, "model_version").empty())
    f.model_version = query_int(query, "model_version", 0, INT64_MIN, INT64_MAX);
  f.step = query_param(query, "step");
  f.task = query_param(query, "task");
  const std::string o = query_param(query, "order");
  buffer::BrowseOrder order = buffer::BrowseOrder::kId;
  if (o == "reward_desc")
    order = buffer::BrowseOrder::kRewardDesc;
  else if (o == "reward_asc")
    order = buffer::BrowseOrder::kRewardAsc;
  else if (!o.empty() && o != "id")
    throw HttpError{400, strcat("order must be id, reward_desc or reward_asc, got '", o, "'"), "invalid_value",
                    "order"};
  const int64_t offset = query_int(query, "offset", 0, 0, INT64_MAX);
  const int64_t limit = query_int(query, "limit", 20, 1, 500);
  buffer::BrowsePage pg;
  try {
    pg = b->page(f, order, offset, limit);
  } catch (const Error& e) {
    throw HttpError{500, e.what(), "io_error", "source"};
  }
  auto tk = tokenizer_for(abs);
  json rows = json::array();
  for (const auto& [id, e] : pg.rows) rows.push_back(row_json(id, e, tk.get()));
  return {{"total", pg.total}, {"offset", offset}, {"rows", rows}};
}

json Rollouts::one(const std::string& source, int64_t id) {
  std::string abs;
  auto b = browser(source, &abs);
  std::optional<buffer::Experience> e;
  try {
    e = b->get(id);
  } catch (const Error& x) {
    throw HttpError{500, x.what(), "io_error", "source"};
  }
  if (!e) throw HttpError{404, strcat("no row ", id, " in ", source), "not_found", "id"};
  auto tk = tokenizer_for(abs);
  json j = row_json(id, *e, tk.get());
  j["messages"] = parsed_or_null(e->messages);
  j["tokenizer"] = tk != nullptr;
  json toks = json::array();
  const int64_t pl = e->prompt_length;
  for (size_t i = 0; i < e->tokens.size(); ++i) {
    const int32_t t = e->tokens[i];
    json x = {{"id", t}, {"prompt", static_cast<int64_t>(i) < pl}};
    x["text"] = tk ? tk->decode(std::span<const int32_t>(&e->tokens[i], 1)) : "";
    const int64_t r = static_cast<int64_t>(i) - pl;
    auto at = [&](const auto& v) -> json {
      return r >= 0 && r < static_cast<int64_t>(v.size()) ? num_or_null(static_cast<double>(v[static_cast<size_t>(r)]))
                                                          : json(nullptr);
    };
    x["logprob"] = at(e->logprobs);
    x["advantage"] = at(e->advantages);
    x["mask"] = r >= 0 && r < static_cast<int64_t>(e->action_mask.size()) ? json(e->action_mask[static_cast<size_t>(r)])
                                                                          : json(nullptr);
    toks.push_back(x);
  }
  j["tokens"] = toks;
  return j;
}

json Rollouts::steps(const std::string& source) {
  std::string abs;
  auto b = browser(source, &abs);
  json out = json::array();
  for (const auto& s : b->steps()) {
    json j = {{"step", s.step}, {"count", s.count}, {"rewarded", s.rewarded}};
    j["mean"] = s.rewarded ? num_or_null(s.mean) : json(nullptr);
    j["best"] = s.best_id >= 0 ? json{{"id", s.best_id}, {"reward", num_or_null(s.best)}} : json(nullptr);
    j["worst"] = s.worst_id >= 0 ? json{{"id", s.worst_id}, {"reward", num_or_null(s.worst)}} : json(nullptr);
    out.push_back(j);
  }
  return {{"steps", out}};
}

}  // namespace trinity::studio
