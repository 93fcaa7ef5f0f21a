// Chat with a checkpoint (chat.h).
#include "studio/chat.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "config/config.h"
#include "core/error.h"
#include "core/file.h"
#include "core/timer.h"
#include "explorer/engine_client.h"
#include "launcher/launcher.h"
#include "model/transformer.h"
#include "tokenizer/tokenizer.h"

namespace trinity::studio {

namespace fs = std::filesystem;

namespace {

bool is_model_dir(const fs::path& d) {
  std::error_code ec;
  if (!fs::exists(d / "config.json", ec) || !fs::exists(d / "tokenizer.json", ec)) return false;
  if (fs::exists(d / "model.safetensors", ec) || fs::exists(d / "model.safetensors.index.json", ec)) return true;
  for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".safetensors") return true;
  return false;
}

}  // namespace

json Chat::models() const {
  std::vector<fs::path> dirs;  // model folders (not entered further); run internals without models skipped
  root_.walk(
      [&](const fs::path& p, bool is_dir) {
        const std::string n = p.filename().string();
        if (!is_dir || n == "monitor" || n == "buffer" || n == "tensorboard") return false;
        if (!is_model_dir(p)) return true;
        dirs.push_back(p);
        return false;
      },
      7);
  json out = json::array();
  for (const auto& d : dirs) {
    json j = {{"path", root_.relative(d.string())}, {"run", nullptr}, {"step", nullptr}};
    for (fs::path p = d; p != p.parent_path() && root_.contains(p.string()); p = p.parent_path()) {
      const std::string n = p.filename().string();
      if (n.starts_with("global_step_")) {
        j["step"] = std::strtoll(n.c_str() + 12, nullptr, 10);
        j["run"] = root_.relative(p.parent_path().string());
        break;
      }
    }
    out.push_back(j);
  }
  std::sort(out.begin(), out.end(), [](const json& a, const json& b) {
    const std::string ra = a["run"].is_string() ? a["run"].get<std::string>() : "";
    const std::string rb = b["run"].is_string() ? b["run"].get<std::string>() : "";
    if (ra != rb) return ra < rb;
    const int64_t sa = a["step"].is_number() ? a["step"].get<int64_t>() : -1;
    const int64_t sb = b["step"].is_number() ? b["step"].get<int64_t>() : -1;
    return sa != sb ? sa > sb : a["path"].get<std::string>() < b["path"].get<std::string>();
  });
  std::lock_guard<std::mutex> l(mu_);
  return {{"models", out}, {"loaded", path_.empty() ? json(nullptr) : json(root_.relative(path_))}};
}

std::string Chat::loaded() const {
  std::lock_guard<std::mutex> l(mu_);
  return path_;
}

json Chat::chat(const json& body) {
  const std::string abs = root_.resolve(str_field(body, "model", true), "model");
  if (!is_model_dir(abs))
    throw HttpError{404,
                    strcat("'", str_field(body, "model", true),
                           "' is not a model folder (config.json, tokenizer.json and *.safetensors)"),
                    "not_found", "model"};
  if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty())
    throw HttpError{400, "'messages' (a non-empty list of {role, content}) is required", "invalid_request", "messages"};
  for (const auto& m : body["messages"])
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string())
      throw HttpError{400, "each message must be {\"role\": string, \"content\": string}", "invalid_request",
                      "messages"};
  workflow::GenOptions o;
  o.n = 1;
  o.max_tokens =
      body.contains("max_tokens") && body["max_tokens"].is_number_integer() ? body["max_tokens"].get<int64_t>() : 128;
  if (*o.max_tokens < 1 || *o.max_tokens > 4096)
    throw HttpError{400, "'max_tokens' must be in [1, 4096]", "invalid_value", "max_tokens"};
  if (body.contains("temperature") && body["temperature"].is_number())
    o.temperature = body["temperature"].get<double>();
  if (o.temperature && !(*o.temperature >= 0 && *o.temperature <= 10))
    throw HttpError{400, "'temperature' must be in [0, 10]", "invalid_value", "temperature"};
  if (body.contains("top_p") && body["top_p"].is_number()) o.top_p = body["top_p"].get<double>();
  if (body.contains("seed") && body["seed"].is_number_integer()) o.seed = body["seed"].get<uint64_t>();

  std::lock_guard<std::mutex> l(mu_);
  double load_seconds = 0;
  if (path_ != abs || !model_) {
    model_.reset();  // one engine at a time: free the old one first
    path_.clear();
    Timer t;
    try {
      config::Config c;
      c.model.model_path = abs;
      auto weights = std::make_shared<const model::Transformer>(model::Transformer::load(abs));
      model_ = launcher::make_rollout_model(c, std::move(weights), 0);
    } catch (const Error& e) {
      throw HttpError{400, strcat("cannot load ", root_.relative(abs), ": ", e.what()), "model_load_failed", "model"};
    }
    path_ = abs;
    load_seconds = t.seconds();
  }
  explorer::EngineClient client(model_, nullptr, std::nullopt);
  std::vector<workflow::Sample> s;
  try {
    s = client.chat(body["messages"].dump(), o);
  } catch (const Error& e) {
    throw HttpError{400, e.what(), "generation_failed", "messages"};
  }
  if (s.empty()) throw HttpError{500, "the engine returned no sample", "generation_failed", ""};
  const auto& tk = model_->chat->tokenizer();
  json toks = json::array();
  for (size_t i = 0; i < s[0].ids.size(); ++i) {
    const int32_t id = s[0].ids[i];
    const double lp = i < s[0].logprobs.size() ? s[0].logprobs[i] : NAN;
    toks.push_back({{"id", id},
                    {"text", tk.decode(std::span<const int32_t>(&s[0].ids[i], 1))},
                    {"logprob", std::isfinite(lp) ? json(lp) : json(nullptr)}});
  }
  return {{"model", root_.relative(abs)},
          {"text", s[0].text},
          {"finish_reason", s[0].finish_reason},
          {"tokens", toks},
          {"prompt_tokens", s[0].prompt_ids.size()},
          {"load_seconds", load_seconds}};
}

}  // namespace trinity::studio
