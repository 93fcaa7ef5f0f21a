// Responses API request -> chat request (see responses.h). The Responses body is validated here
// (errors name its own fields: "input[3].call_id", "text.format.type", "tools[1].type"), rewritten
// as a chat-completions body and handed to parse_chat_request, whose remaining errors are renamed
// back ("messages[k]" -> the input item it came from, "response_format.json_schema" -> "text.format").
#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "server/json_limits.h"
#include "server/json_util.h"
#include "server/responses.h"

namespace trinity::server {

namespace {

using json = nlohmann::ordered_json;

using json_util::bad;
using json_util::field;
using json_util::type_name;
using json_util::wrong_type;

std::string get_string(const json& o, const char* key, const std::string& at, bool required) {
  const json* v = field(o, key);
  if (!v) {
    if (required) bad(at, strcat("'", at, "' is required"));
    return "";
  }
  if (!v->is_string()) wrong_type(at, "a string", *v);
  return v->get<std::string>();
}

// Top-level fields: passed on to the chat parser, handled here, or refused.
const char* const kPassThrough[] = {"model", "temperature", "top_p", "stream", "parallel_tool_calls",
                                    // vLLM extensions, as on /v1/chat/completions
                                    "seed", "top_k", "min_p", "repetition_penalty", "chat_template_kwargs"};
const char* const kHandled[] = {"input",
                                "instructions",
                                "tools",
                                "tool_choice",
                                "text",
                                "max_output_tokens",
                                "metadata",
                                "user",
                                "store",
                                "include",
                                "top_logprobs",
                                "reasoning",
                                "truncation",
                                "service_tier",
                                "stream_options",
                                "background",
                                "prompt_cache_key",
                                "prompt_cache_retention",
                                "safety_identifier"};
const char* const kRefused[] = {"previous_response_id", "conversation", "prompt", "max_tool_calls"};

bool in(const char* const* b, const char* const* e, const std::string& k) {
  return std::any_of(b, e, [&](const char* s) { return k == s; });
}

// Where each chat message (and each of its tool calls) came from, to rename chat parser errors.
struct Origins {
  std::vector<std::string> message;                 // "instructions" or "input[i]"
  std::vector<std::vector<std::string>> tool_call;  // per message: "input[j]" of each function_call
};

// Message content: a string, or text parts (input_text / output_text) joined.
std::string content_text(const json& content, const std::string& at) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) wrong_type(at, "a string or an array of content parts", content);
  std::string text;
  for (size_t k = 0; k < content.size(); ++k) {
    const json& part = content[k];
    const std::string pat = strcat(at, "[", k, "]");
    if (!part.is_object()) wrong_type(pat, "an object", part);
    const std::string type = get_string(part, "type", pat + ".type", true);
    if (type != "input_text" && type != "output_text" && type != "text")
      bad(pat + ".type",
          strcat("content part type '", type, "' is not supported: only text parts (input_text, output_text) are; ",
                 "trinity serves text-only models"));
    text += get_string(part, "text", pat + ".text", true);
  }
  return text;
}

class InputConverter {
 public:
  InputConverter(const ItemLookup& lookup, json& messages, Origins& origins)
      : lookup_(lookup), msgs_(messages), org_(origins) {}

  void item(const json& it, const std::string& at, bool referenced) {
    if (!it.is_object()) wrong_type(at, "an object", it);
    const std::string type = field(it, "type") ? get_string(it, "type", at + ".type", true) : "message";
    if (type == "message") {
      message(it, at);
    } else if (type == "function_call") {
      function_call(it, at);
    } else if (type == "function_call_output") {
      const std::string call_id = get_string(it, "call_id", at + ".call_id", true);
      const json* out = field(it, "output");
      if (!out) bad(at + ".output", strcat("'", at, ".output' is required"));
      push({{"role", "tool"}, {"tool_call_id", call_id}, {"content", content_text(*out, at + ".output")}}, at);
    } else if (type == "item_reference") {
      const std::string id = get_string(it, "id", at + ".id", true);
      if (referenced) bad(at + ".id", "an item_reference may not point to another item_reference");
      const std::optional<std::string> stored = lookup_ ? lookup_(id) : std::nullopt;
      if (!stored)
        bad(at + ".id", strcat("no stored item '", id.substr(0, 100), "': trinity keeps the output items of recent ",
                               "responses in memory only (not across restarts, not those with store: false); send ",
                               "the item itself instead"));
      item(json::parse(*stored), at, true);
    } else if (type == "reasoning") {
      bad(at + ".type", "reasoning items are not supported (trinity does not return them); leave them out");
    } else {
      bad(at + ".type", strcat("input item type '", type.substr(0, 100), "' is not supported; supported: message, ",
                               "function_call, function_call_output, item_reference"));
    }
  }

 private:
  void push(json m, const std::string& at) {
    msgs_.push_back(std::move(m));
    org_.message.push_back(at);
    org_.tool_call.emplace_back();
  }

  void message(const json& it, const std::string& at) {
    const std::string role = get_string(it, "role", at + ".role", true);
    if (role != "user" && role != "system" && role != "developer" && role != "assistant")
      bad(at + ".role",
          strcat("'", at, ".role' must be user, system, developer or assistant; got '", role.substr(0, 100), "'"));
    const json* content = field(it, "content");
    if (!content) bad(at + ".content", strcat("'", at, ".content' is required"));
    const std::string text = content_text(*content, at + ".content");
    // Consecutive assistant items (text, then its function calls) are one chat message.
    push({{"role", role}, {"content", text}}, at);
  }

  void function_call(const json& it, const std::string& at) {
    const std::string call_id = get_string(it, "call_id", at + ".call_id", true);
    const std::string name = get_string(it, "name", at + ".name", true);
    if (name.empty()) bad(at + ".name", strcat("'", at, ".name' must not be empty"));
    const std::string args = get_string(it, "arguments", at + ".arguments", true);
    if (json_depth(args) > kMaxRequestJsonDepth)
      bad(at + ".arguments", strcat("'", at, ".arguments' nests deeper than ", kMaxRequestJsonDepth, " levels"));
    json parsed;
    try {
      parsed = json::parse(args);
    } catch (const json::exception&) {
      bad(at + ".arguments", strcat("'", at, ".arguments' is not valid JSON"));
    }
    if (!parsed.is_object()) bad(at + ".arguments", strcat("'", at, ".arguments' must be a JSON object"));
    json call = {{"id", call_id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args}}}};
    const bool merge = !msgs_.empty() && msgs_.back()["role"] == "assistant";
    if (!merge) push({{"role", "assistant"}, {"content", ""}}, at);
    json& m = msgs_.back();
    if (!m.contains("tool_calls")) m["tool_calls"] = json::array();
    m["tool_calls"].push_back(std::move(call));
    org_.tool_call.back().push_back(at);
  }

  const ItemLookup& lookup_;
  json& msgs_;
  Origins& org_;
};

// tools: [{type: "function", name, description?, parameters?, strict?}] -> chat tools.
json convert_tools(const json& tools) {
  if (!tools.is_array()) wrong_type("tools", "an array", tools);
  json out = json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const json& t = tools[i];
    const std::string at = strcat("tools[", i, "]");
    if (!t.is_object()) wrong_type(at, "an object", t);
    const std::string type = get_string(t, "type", at + ".type", true);
    if (type != "function")
      bad(at + ".type", strcat("tool type '", type.substr(0, 100), "' is not supported: trinity runs only function ",
                               "tools (built-in tools such as web_search or file_search are OpenAI-hosted)"));
    json fn = json::object();
    fn["name"] = get_string(t, "name", at + ".name", true);
    if (const json* d = field(t, "description")) {
      if (!d->is_string()) wrong_type(at + ".description", "a string", *d);
      fn["description"] = *d;
    }
    if (const json* p = field(t, "parameters")) fn["parameters"] = *p;
    if (const json* s = field(t, "strict")) {
      if (!s->is_boolean()) wrong_type(at + ".strict", "a boolean", *s);
      fn["strict"] = *s;
    }
    out.push_back({{"type", "function"}, {"function", fn}});
  }
  return out;
}

json convert_tool_choice(const json& v) {
  if (v.is_string()) return v;  // "auto" / "none" / "required": checked by the chat parser
  if (!v.is_object()) wrong_type("tool_choice", "a string or an object", v);
  const std::string type = get_string(v, "type", "tool_choice.type", true);
  if (type != "function")
    bad("tool_choice.type", strcat("tool_choice type '", type.substr(0, 100), "' is not supported; use \"auto\", ",
                                   "\"none\", \"required\" or {\"type\": \"function\", \"name\": ...}"));
  return {{"type", "function"}, {"function", {{"name", get_string(v, "name", "tool_choice.name", true)}}}};
}

// text: {format: {type: text | json_object | json_schema, ...}, verbosity?} -> response_format.
json convert_text(const json& text, json& echo_text) {
  if (!text.is_object()) wrong_type("text", "an object", text);
  echo_text = json::object();
  for (auto it = text.begin(); it != text.end(); ++it)
    if (it.key() != "format" && it.key() != "verbosity")
      bad("text." + it.key(), strcat("unknown parameter 'text.", it.key().substr(0, 100), "'"), "unknown_parameter");
  if (const json* vb = field(text, "verbosity")) {
    // A length hint for OpenAI's models; no effect here (the answer length is the model's).
    if (!vb->is_string() || (*vb != "low" && *vb != "medium" && *vb != "high"))
      bad("text.verbosity", "'text.verbosity' must be \"low\", \"medium\" or \"high\"");
    echo_text["verbosity"] = *vb;
  }
  const json* f = field(text, "format");
  if (!f) {
    echo_text["format"] = {{"type", "text"}};
    return json();
  }
  if (!f->is_object()) wrong_type("text.format", "an object", *f);
  const std::string type = get_string(*f, "type", "text.format.type", true);
  echo_text["format"] = *f;
  if (type == "text") return json();
  if (type == "json_object") return {{"type", "json_object"}};
  if (type != "json_schema")
    bad("text.format.type", strcat("'text.format.type' must be \"text\", \"json_object\" or \"json_schema\", got \"",
                                   type.substr(0, 100), "\""));
  json js = json::object();
  for (const char* k : {"name", "schema", "strict", "description"})
    if (f->contains(k)) js[k] = (*f)[k];
  return {{"type", "json_schema"}, {"json_schema", js}};
}

// "messages[k]<rest>" -> the input item it came from.
std::string rename_message_param(const std::string& p, const Origins& o) {
  const size_t close = p.find(']');
  if (close == std::string::npos) return "input";
  size_t k = 0;
  try {
    k = std::stoul(p.substr(9, close - 9));
  } catch (const std::exception&) {
    return "input";
  }
  if (k >= o.message.size()) return "input";
  std::string rest = p.substr(close + 1);
  if (rest.rfind(".tool_calls[", 0) == 0) {
    const size_t c2 = rest.find(']');
    size_t m = 0;
    try {
      m = std::stoul(rest.substr(12, c2 - 12));
    } catch (const std::exception&) {
      return o.message[k];
    }
    if (m >= o.tool_call[k].size()) return o.message[k];
    rest = rest.substr(c2 + 1);
    if (rest.rfind(".function", 0) == 0) rest = rest.substr(9);
    return o.tool_call[k][m] + rest;
  }
  return o.message[k] + rest;
}

std::string rename_param(const std::string& p, const Origins* o) {
  if (p.rfind("messages[", 0) == 0 && o) return rename_message_param(p, *o);
  if (p.rfind("response_format.json_schema", 0) == 0) return "text.format" + p.substr(27);
  if (p.rfind("response_format", 0) == 0) return "text.format" + p.substr(15);
  if (p.rfind("tools[", 0) == 0) {
    const size_t f = p.find("].function");
    if (f != std::string::npos) return p.substr(0, f + 1) + p.substr(f + 10);
  }
  return responses_param(p);
}

}  // namespace

std::string responses_param(const std::string& p) {
  if (p == "max_tokens" || p == "max_completion_tokens") return "max_output_tokens";
  if (p == "messages") return "input";
  return p;
}

ResponsesRequest parse_responses_request(std::string_view body, const ItemLookup& lookup) {
  // The chat parser's body checks (JSON, object, depth) apply here too.
  if (json_depth(body) > kMaxRequestJsonDepth)
    bad("", strcat("request body nests deeper than ", kMaxRequestJsonDepth, " levels"));
  json j;
  try {
    j = json::parse(body);
  } catch (const json::out_of_range&) {
    bad("", "request body holds a number that overflows a double");
  } catch (const json::exception& e) {
    bad("", strcat("request body is not valid JSON: ", e.what()));
  }
  if (!j.is_object()) bad("", strcat("request body must be a JSON object, got ", type_name(j)));

  json chat = json::object();
  json echo = json::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (in(std::begin(kPassThrough), std::end(kPassThrough), k)) {
      chat[k] = *it;
    } else if (in(std::begin(kRefused), std::end(kRefused), k)) {
      if (it->is_null()) continue;
      if (k == "previous_response_id" || k == "conversation")
        bad(k, strcat("'", k, "' is not supported: trinity does not keep conversations; send the whole ",
                      "conversation in 'input' (item_reference works for recent output items)"));
      bad(k, strcat("'", k, "' is not supported"));
    } else if (!in(std::begin(kHandled), std::end(kHandled), k)) {
      bad(k, strcat("unknown parameter '", k.substr(0, 100), "'"), "unknown_parameter");
    }
  }

  // input (+ instructions) -> messages.
  json messages = json::array();
  Origins origins;
  if (const json* ins = field(j, "instructions")) {
    if (!ins->is_string()) wrong_type("instructions", "a string", *ins);
    messages.push_back({{"role", "system"}, {"content", *ins}});
    origins.message.push_back("instructions");
    origins.tool_call.emplace_back();
    echo["instructions"] = *ins;
  } else {
    echo["instructions"] = nullptr;
  }
  const json* input = field(j, "input");
  if (!input) bad("input", "'input' is required");
  InputConverter conv(lookup, messages, origins);
  if (input->is_string()) {
    messages.push_back({{"role", "user"}, {"content", *input}});
    origins.message.push_back("input");
    origins.tool_call.emplace_back();
  } else if (input->is_array()) {
    if (input->empty()) bad("input", "'input' must contain at least one item");
    for (size_t i = 0; i < input->size(); ++i) conv.item((*input)[i], strcat("input[", i, "]"), false);
  } else {
    wrong_type("input", "a string or an array of input items", *input);
  }
  chat["messages"] = messages;

  if (const json* v = field(j, "max_output_tokens")) chat["max_tokens"] = *v;
  echo["max_output_tokens"] = j.contains("max_output_tokens") ? j["max_output_tokens"] : json(nullptr);
  if (const json* v = field(j, "tools")) chat["tools"] = convert_tools(*v);
  echo["tools"] = field(j, "tools") ? j["tools"] : json::array();
  if (const json* v = field(j, "tool_choice")) chat["tool_choice"] = convert_tool_choice(*v);
  echo["tool_choice"] = field(j, "tool_choice") ? j["tool_choice"] : json("auto");
  json echo_text = {{"format", {{"type", "text"}}}};
  if (const json* v = field(j, "text")) {
    const json rf = convert_text(*v, echo_text);
    if (!rf.is_null()) chat["response_format"] = rf;
  }
  echo["text"] = echo_text;

  // include / top_logprobs -> logprobs.
  bool want_logprobs = false;
  if (const json* v = field(j, "include")) {
    if (!v->is_array()) wrong_type("include", "an array of strings", *v);
    for (size_t i = 0; i < v->size(); ++i) {
      const json& s = (*v)[i];
      const std::string at = strcat("include[", i, "]");
      if (!s.is_string()) wrong_type(at, "a string", s);
      if (s == "message.output_text.logprobs") want_logprobs = true;
      // Only reasoning models produce encrypted reasoning; there is none to include here.
      else if (s != "reasoning.encrypted_content")
        bad(at, strcat("include value '", s.get<std::string>().substr(0, 100),
                       "' is not supported; supported: message.output_text.logprobs"));
    }
  }
  int64_t top_logprobs = 0;
  if (const json* v = field(j, "top_logprobs")) {
    if (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() > 20)
      bad("top_logprobs", "'top_logprobs' must be an integer in [0, 20]");
    top_logprobs = v->get<int64_t>();
    if (top_logprobs > 0) want_logprobs = true;
  }
  if (want_logprobs) {
    chat["logprobs"] = true;
    chat["top_logprobs"] = top_logprobs;
  }
  echo["top_logprobs"] = top_logprobs;

  // Accepted, no effect (documented): metadata is echoed, user / cache keys are ignored.
  if (const json* v = field(j, "metadata")) {
    if (!v->is_object() || v->size() > 16) bad("metadata", "'metadata' must be an object of at most 16 strings");
    for (auto it = v->begin(); it != v->end(); ++it)
      if (!it->is_string()) wrong_type("metadata." + it.key(), "a string", *it);
    echo["metadata"] = *v;
  } else {
    echo["metadata"] = json::object();
  }
  for (const char* k : {"user", "prompt_cache_key", "safety_identifier", "prompt_cache_retention", "service_tier"})
    if (const json* v = field(j, k); v && !v->is_string()) wrong_type(k, "a string", *v);
  echo["user"] = field(j, "user") ? j["user"] : json(nullptr);
  bool store = true;
  if (const json* v = field(j, "store")) {
    if (!v->is_boolean()) wrong_type("store", "a boolean", *v);
    store = v->get<bool>();
  }
  echo["store"] = store;
  if (const json* v = field(j, "background")) {
    if (!v->is_boolean()) wrong_type("background", "a boolean", *v);
    if (v->get<bool>()) bad("background", "'background' responses are not supported (nothing is stored to poll)");
  }
  if (const json* v = field(j, "truncation")) {
    if (*v != "disabled")
      bad("truncation", "only 'truncation': \"disabled\" is supported (a prompt over the context is a 400)");
  }
  if (const json* v = field(j, "reasoning")) {
    if (!v->is_object()) wrong_type("reasoning", "an object", *v);
    for (auto it = v->begin(); it != v->end(); ++it)
      if (!it->is_null())
        bad("reasoning." + it.key(), strcat("'reasoning.", it.key().substr(0, 100), "' is not supported (Qwen3 ",
                                            "thinking is switched with chat_template_kwargs.enable_thinking)"));
  }
  if (const json* v = field(j, "stream_options")) {
    if (!v->is_object()) wrong_type("stream_options", "an object", *v);
    if (!(field(j, "stream") && j["stream"] == true))
      bad("stream_options", "'stream_options' is only allowed with stream: true");
  }
  echo["parallel_tool_calls"] = field(j, "parallel_tool_calls") ? j["parallel_tool_calls"] : json(true);
  echo["temperature"] = field(j, "temperature") ? j["temperature"] : json(1.0);
  echo["top_p"] = field(j, "top_p") ? j["top_p"] : json(1.0);

  ResponsesRequest r;
  try {
    r.chat = parse_chat_request(chat.dump(-1, ' ', false, json::error_handler_t::replace));
  } catch (const ApiError& e) {
    throw ApiError(e.status, e.what(), rename_param(e.param, &origins), e.code, e.type);
  }
  r.echo = echo.dump(-1, ' ', false, json::error_handler_t::replace);
  r.store = store;
  return r;
}

void ResponseItemStore::put(const std::string& id, std::string item_json) {
  std::lock_guard<std::mutex> l(mu_);
  if (item_json.size() > max_bytes_) return;
  auto [it, fresh] = items_.try_emplace(id);
  if (!fresh) bytes_ -= it->second.size();
  bytes_ += item_json.size();
  it->second = std::move(item_json);
  if (fresh) order_.push_back(id);
  while (!order_.empty() && (items_.size() > max_items_ || bytes_ > max_bytes_)) {
    auto old = items_.find(order_.front());
    if (old != items_.end()) {
      bytes_ -= old->second.size();
      items_.erase(old);
    }
    order_.pop_front();
  }
}

std::optional<std::string> ResponseItemStore::get(const std::string& id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = items_.find(id);
  if (it == items_.end()) return std::nullopt;
  return it->second;
}

size_t ResponseItemStore::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return items_.size();
}

}  // namespace trinity::server
