// ExternalClient: chat completions of an external OpenAI-compatible API (see external_client.h).
#include "explorer/external_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "core/file.h"
#include "core/log.h"
#include "tokenizer/model_files.h"

namespace trinity::explorer {

using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxBody = size_t{64} << 20;  // a chat completion is far smaller; a runaway body is cut

// One request's outcome: an HTTP status and body, or (status 0) why no response came.
struct Reply {
  long status = 0;
  std::string body;
  std::string error;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* body = static_cast<std::string*>(user);
  if (body->size() + size * n > kMaxBody) return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  body->append(data, size * n);
  return size * n;
}

// Called by libcurl about once a second (and on every chunk): a cancelled attempt aborts its requests.
int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(user)->load() ? 1 : 0;
}

Reply post_once(const std::string& url, const std::string& api_key, const std::string& body, double timeout_s,
                const std::atomic<bool>& cancelled) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<CURL, void (*)(CURL*)> h(curl_easy_init(), &curl_easy_cleanup);
  if (!h) throw Error("explorer", "external_model: curl_easy_init failed");
  CURL* c = h.get();
  curl_slist* hdrs = nullptr;
  hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
  hdrs = curl_slist_append(hdrs, "Accept: application/json");
  hdrs = curl_slist_append(hdrs, ("Authorization: Bearer " + api_key).c_str());
  hdrs = curl_slist_append(hdrs, "Expect:");  // no 100-continue round trip for large bodies
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> hdr_guard(hdrs, &curl_slist_free_all);
  Reply r;
  char errbuf[CURL_ERROR_SIZE] = {0};
  const long timeout_ms = std::max(1L, static_cast<long>(timeout_s * 1000.0));
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(c, CURLOPT_USERAGENT, "trinity");
  // Redirects are not followed: the key must not travel to wherever a redirect points.
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms, 30000L));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, &on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(&cancelled));
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  const CURLcode rc = curl_easy_perform(c);
  if (cancelled.load()) throw workflow::CancelledError("the attempt was cancelled (timeout or shutdown)");
  if (rc != CURLE_OK) {
    r.error = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    if (rc == CURLE_WRITE_ERROR && r.body.size() + 1 > kMaxBody) r.error = "the response is larger than 64 MiB";
    r.body.clear();
    return r;
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  return r;
}

bool retryable(const Reply& r) {
  return r.status == 0 || r.status == 408 || r.status == 409 || r.status == 429 || r.status >= 500;
}

// The error message an OpenAI-style error body carries ({"error": {"message"}}, {"error": "..."},
// {"message"}, FastAPI's {"detail"}), else the start of the body.
std::string body_error(const std::string& body) {
  try {
    const json j = json::parse(body);
    if (j.is_object()) {
      for (const char* k : {"error", "message", "detail"}) {
        if (!j.contains(k)) continue;
        const json& e = j[k];
        if (e.is_string()) return e.get<std::string>();
        if (e.is_object() && e.contains("message") && e["message"].is_string()) return e["message"].get<std::string>();
        return e.dump();
      }
    }
  } catch (const json::exception&) {
  }
  if (body.empty()) return "(empty body)";
  return body.size() > 300 ? body.substr(0, 300) + "..." : body;
}

// Text of a choice's message: a string, null (tool calls only) or a list of {"type": "text", "text"} parts.
std::string content_text(const json& msg) {
  if (!msg.is_object() || !msg.contains("content")) return "";
  const json& c = msg["content"];
  if (c.is_string()) return c.get<std::string>();
  std::string out;
  if (c.is_array())
    for (const auto& part : c)
      if (part.is_object() && part.contains("text") && part["text"].is_string()) out += part["text"].get<std::string>();
  return out;
}

tok::Tokenizer load_tokenizer(const std::string& dir, std::string* origin) {
  if (!dir.empty() && file::exists(file::join(dir, "tokenizer.json"))) {
    try {
      tok::Tokenizer t = tok::Tokenizer::load(dir);
      *origin = file::join(dir, "tokenizer.json");
      return t;
    } catch (const Error& e) {
      log::warn("external_model: cannot load the tokenizer of ", dir, " (", e.what(),
                "); using the built-in byte-level tokenizer");
    }
  }
  *origin = "the built-in byte-level tokenizer";
  return tok::byte_tokenizer();
}

[[noreturn]] void unsupported(const std::string& what) {
  throw UnsupportedError("explorer", strcat("external_model: ", what,
                                            " not available through an external API (it returns text only); use a "
                                            "workflow that calls chat() or generate(), e.g. math_workflow"));
}

}  // namespace

ExternalModelOptions ExternalModel::options_from_env(const std::string& base_url_env, const std::string& api_key_env) {
  ExternalModelOptions o;
  const char* url = std::getenv(base_url_env.c_str());
  if (!url || !*url)
    throw ConfigError("explorer", strcat("model.external_model.base_url_env: environment variable ", base_url_env,
                                         " is not set; set it to the API's base URL, e.g. ", base_url_env,
                                         "=https://api.openai.com/v1"));
  o.base_url = url;
  while (!o.base_url.empty() && o.base_url.back() == '/') o.base_url.pop_back();
  if (o.base_url.rfind("http://", 0) != 0 && o.base_url.rfind("https://", 0) != 0)
    throw ConfigError("explorer", strcat("model.external_model.base_url_env: ", base_url_env, "='", url,
                                         "' is not an http:// or https:// URL"));
  const char* key = std::getenv(api_key_env.c_str());
  o.api_key = key && *key ? key : "EMPTY";
  return o;
}

ExternalModel::ExternalModel(ExternalModelOptions opts, const std::string& tokenizer_dir)
    : opts_(std::move(opts)), tok_(load_tokenizer(tokenizer_dir, &tokenizer_origin_)) {}

ExternalClient::ExternalClient(std::shared_ptr<const ExternalModel> model, const buffer::Task* task)
    : m_(std::move(model)), task_(task) {}

void ExternalClient::check() const {
  if (cancelled_.load()) throw workflow::CancelledError("the attempt was cancelled (timeout or shutdown)");
}

std::vector<workflow::Sample> ExternalClient::chat(const std::string& messages_json, const workflow::GenOptions& opt,
                                                   const std::string& tools_json) {
  check();
  const ExternalModelOptions& o = m_->options();
  json messages, tools;
  try {
    messages = json::parse(messages_json);
    if (!tools_json.empty()) tools = json::parse(tools_json);
  } catch (const json::exception& e) {
    throw ValueError("explorer", strcat("external_model: chat(): messages / tools are not JSON: ", e.what()));
  }
  if (!messages.is_array() || (!tools_json.empty() && !tools.is_array()))
    throw ValueError("explorer", "external_model: chat() needs a JSON array of messages (and of tools)");
  const buffer::RolloutArgs* ra = task_ ? &task_->rollout_args : nullptr;
  const double temperature =
      opt.temperature.value_or(ra && ra->temperature ? *ra->temperature : o.defaults.temperature);
  const int64_t max_tokens = opt.max_tokens.value_or(ra && ra->max_tokens ? *ra->max_tokens : o.defaults.max_tokens);
  const size_t n = static_cast<size_t>(std::max<int64_t>(1, opt.n));
  const std::string url = m_->chat_url();
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.timeout_s));
  std::vector<workflow::Sample> out;
  // An API that ignores `n` (or returns fewer choices) is asked again for the rest.
  while (out.size() < n) {
    json req = {{"model", o.model_name},
                {"messages", messages},
                {"temperature", temperature},
                {"max_completion_tokens", max_tokens},
                {"n", n - out.size()}};
    if (!opt.stop.empty()) req["stop"] = opt.stop;
    if (!tools_json.empty()) req["tools"] = tools;
    const std::string body = req.dump();
    Reply r;
    for (int attempt = 0;; ++attempt) {
      const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
      if (left <= 0) {
        r.status = 0;
        r.error = strcat("no answer within ", o.timeout_s, " s (explorer.max_timeout)");
        break;
      }
      r = post_once(url, o.api_key, body, left, cancelled_);
      if (r.status >= 200 && r.status < 300) break;
      if (!retryable(r) || attempt >= o.max_retries) break;
      const double wait = o.retry_backoff_s * static_cast<double>(1 << attempt);
      log::debug("external_model: POST ", url, ": ",
                 r.status ? strcat("HTTP ", r.status, ": ", body_error(r.body)) : r.error, "; retrying in ", wait,
                 " s");
      const auto until =
          Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait));
      while (Clock::now() < until) {
        check();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    if (r.status == 0) throw Error("explorer", strcat("external_model: POST ", url, " failed: ", r.error));
    if (r.status < 200 || r.status >= 300)
      throw Error("explorer",
                  strcat("external_model: POST ", url, " returned HTTP ", r.status, ": ", body_error(r.body)));
    json resp;
    try {
      resp = json::parse(r.body);
    } catch (const json::exception&) {
      throw Error("explorer", strcat("external_model: POST ", url, ": the response is not JSON: ", body_error(r.body)));
    }
    if (!resp.is_object() || !resp.contains("choices") || !resp["choices"].is_array() || resp["choices"].empty())
      throw Error("explorer",
                  strcat("external_model: POST ", url, ": the response has no choices: ", r.body.substr(0, 300)));
    std::map<std::string, double> usage;
    if (resp.contains("usage") && resp["usage"].is_object())
      for (const auto& [k, v] : resp["usage"].items())
        if (v.is_number()) usage["usage/" + k] = v.get<double>();
    for (const auto& ch : resp["choices"]) {
      if (out.size() == n) break;
      workflow::Sample s;
      s.prompt_ids = {0};
      s.ids = {0};
      s.logprobs = {0.0f};
      s.text = content_text(ch.is_object() && ch.contains("message") ? ch["message"] : json());
      if (ch.is_object() && ch.contains("finish_reason") && ch["finish_reason"].is_string())
        s.finish_reason = ch["finish_reason"].get<std::string>();
      s.metrics = usage;
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::vector<workflow::Sample> ExternalClient::generate(const std::string& prompt, const workflow::GenOptions& opt) {
  return chat(json::array({{{"role", "user"}, {"content", prompt}}}).dump(), opt);
}

std::vector<workflow::Sample> ExternalClient::generate_ids(const std::vector<int32_t>&, const workflow::GenOptions&) {
  unsupported("generate_ids (generation from token ids) is");
}

std::vector<int32_t> ExternalClient::apply_chat_template(const std::string&, bool, const std::string&,
                                                         std::optional<bool>) {
  unsupported("apply_chat_template (the API applies its own chat template) is");
}

std::string ExternalClient::render_chat_template(const std::string&, bool, const std::string&, std::optional<bool>) {
  unsupported("render_chat_template (the API applies its own chat template) is");
}

std::vector<float> ExternalClient::logprobs(const std::vector<int32_t>&, double) {
  unsupported("logprobs are");
}

std::unique_ptr<workflow::OpenAIEndpoint> ExternalClient::open_openai_endpoint() {
  unsupported("the recorded OpenAI endpoint of command_workflow is");
}

}  // namespace trinity::explorer
