// Request parsing and validation for the OpenAI endpoints (see protocol.h). Field names in errors
// are the request's own (OpenAI's), e.g. param "max_tokens", "messages[1].role", "tools[0].function.name".
#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "server/json_limits.h"
#include "server/json_util.h"
#include "server/protocol.h"

namespace trinity::server {

namespace {

using json = nlohmann::ordered_json;
namespace jinja = tok::jinja;

constexpr int kMaxDepth = kMaxRequestJsonDepth;

using json_util::bad;
using json_util::field;
using json_util::type_name;
using json_util::wrong_type;

json parse_body(std::string_view body) {
  if (json_depth(body) > kMaxDepth) bad("", strcat("request body nests deeper than ", kMaxDepth, " levels"));
  json j;
  std::string last_key;  // names the field of a number that overflows a double (1e400)
  try {
    j = json::parse(body, [&](int, json::parse_event_t ev, json& v) {
      if (ev == json::parse_event_t::key && v.is_string()) last_key = v.get<std::string>();
      return true;
    });
  } catch (const json::parse_error& e) {
    bad("", strcat("request body is not valid JSON: ", e.what()));
  } catch (const json::out_of_range&) {
    bad(last_key, strcat("'", last_key, "' is not a representable number (it overflows a double)"));
  } catch (const json::exception& e) {
    bad("", strcat("request body is not valid JSON: ", e.what()));
  }
  if (!j.is_object()) bad("", strcat("request body must be a JSON object, got ", type_name(j)));
  return j;
}

std::optional<bool> get_bool(const json& o, const char* key) {
  const json* v = field(o, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(key, "a boolean", *v);
  return v->get<bool>();
}

std::optional<double> get_number(const json& o, const char* key) {
  const json* v = field(o, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong_type(key, "a number", *v);
  const double d = v->get<double>();
  if (!std::isfinite(d)) bad(key, strcat("'", key, "' must be finite"));
  return d;
}

std::optional<int64_t> get_int(const json& o, const char* key) {
  const json* v = field(o, key);
  if (!v) return std::nullopt;
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) return static_cast<int64_t>(d);
    wrong_type(key, "an integer", *v);
  }
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      bad(key, strcat("'", key, "' is too large"));
    return static_cast<int64_t>(u);
  }
  if (!v->is_number_integer()) wrong_type(key, "an integer", *v);
  return v->get<int64_t>();
}

void require_range(const char* key, double v, double lo, double hi, bool lo_open = false) {
  if (v < lo || v > hi || (lo_open && v == lo))
    bad(key, strcat("'", key, "' must be in ", lo_open ? "(" : "[", lo, ", ", hi, "], got ", v));
}

// Feature fields trinity does not implement: refused when they ask for something.
void refuse_unsupported(const json& j) {
  for (const char* k : {"presence_penalty", "frequency_penalty"}) {
    if (auto v = get_number(j, k); v && *v != 0.0)
      bad(k, strcat("'", k, "' is not supported (use repetition_penalty)"));
  }
  if (const json* v = field(j, "logit_bias")) {
    if (!v->is_object()) wrong_type("logit_bias", "an object", *v);
    if (!v->empty()) bad("logit_bias", "'logit_bias' is not supported");
  }
  if (field(j, "functions") || field(j, "function_call"))
    bad(field(j, "functions") ? "functions" : "function_call",
        "the deprecated 'functions' / 'function_call' fields are not supported; use 'tools'");
}

// response_format: text (default), json_object, or json_schema {name, schema, strict} -> a grammar
// for constrained decoding (server/json_grammar.h).
void parse_response_format(const json& j, CommonRequest& r) {
  const json* v = field(j, "response_format");
  if (!v) return;
  if (!v->is_object()) wrong_type("response_format", "an object", *v);
  const json* t = field(*v, "type");
  if (!t || !t->is_string()) bad("response_format.type", "'response_format.type' must be a string");
  const std::string type = t->get<std::string>();
  if (type == "text") return;
  if (type == "json_object") {
    r.grammar = JsonGrammar::any_object();
  } else if (type == "json_schema") {
    const json* js = field(*v, "json_schema");
    if (!js || !js->is_object()) wrong_type("response_format.json_schema", "an object", js ? *js : json());
    const json* name = field(*js, "name");
    if (!name || !name->is_string() || name->get<std::string>().empty())
      bad("response_format.json_schema.name", "'response_format.json_schema.name' must be a non-empty string");
    bool strict = false;
    if (const json* st = field(*js, "strict")) {
      if (!st->is_boolean()) wrong_type("response_format.json_schema.strict", "a boolean", *st);
      strict = st->get<bool>();
    }
    const json* schema = field(*js, "schema");
    if (!schema) {
      r.grammar = JsonGrammar::any_object();
    } else {
      if (!schema->is_object()) wrong_type("response_format.json_schema.schema", "an object", *schema);
      r.grammar = JsonGrammar::from_schema(schema->dump(), "response_format.json_schema.schema", strict);
    }
  } else {
    bad("response_format.type",
        strcat("'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", got \"", type, "\""));
  }
}

void parse_common(const json& j, CommonRequest& r, bool chat) {
  if (const json* v = field(j, "model")) {
    if (!v->is_string()) wrong_type("model", "a string", *v);
    r.model = v->get<std::string>();
  }
  refuse_unsupported(j);
  auto& p = r.sampling;
  if (auto v = get_number(j, "temperature")) {
    if (*v < 0) bad("temperature", strcat("'temperature' must be >= 0, got ", *v));
    p.temperature = *v;
  }
  if (auto v = get_number(j, "top_p")) require_range("top_p", *v, 0, 1, true), p.top_p = *v;
  if (auto v = get_int(j, "top_k")) {
    if (*v < -1) bad("top_k", strcat("'top_k' must be -1 (off) or >= 0, got ", *v));
    p.top_k = *v;
  }
  if (auto v = get_number(j, "min_p")) require_range("min_p", *v, 0, 1), p.min_p = *v;
  if (auto v = get_number(j, "repetition_penalty")) {
    if (!(*v > 0)) bad("repetition_penalty", strcat("'repetition_penalty' must be > 0, got ", *v));
    p.repetition_penalty = *v;
  }
  // max_completion_tokens is the newer name; it wins when both are given.
  for (const char* k : {"max_tokens", "max_completion_tokens"}) {
    if (auto v = get_int(j, k)) {
      if (*v < 1) bad(k, strcat("'", k, "' must be >= 1, got ", *v));
      p.max_tokens = *v;
      r.max_tokens_set = true;
    }
  }
  if (auto v = get_int(j, "min_tokens")) {
    if (*v < 0) bad("min_tokens", strcat("'min_tokens' must be >= 0, got ", *v));
    p.min_tokens = *v;
  }
  if (auto v = get_int(j, "n")) {
    if (*v < 1 || *v > 128) bad("n", strcat("'n' must be in [1, 128], got ", *v));
    p.n = *v;
  }
  if (!chat) {
    if (auto v = get_int(j, "best_of"); v && *v != p.n)
      bad("best_of", "'best_of' other than n is not supported");
  }
  if (const json* v = field(j, "stop")) {
    if (v->is_string()) {
      p.stop = {v->get<std::string>()};
    } else if (v->is_array()) {
      if (v->size() > 16) bad("stop", "'stop' takes at most 16 strings");
      for (size_t i = 0; i < v->size(); ++i) {
        if (!(*v)[i].is_string()) wrong_type(strcat("stop[", i, "]"), "a string", (*v)[i]);
        p.stop.push_back((*v)[i].get<std::string>());
      }
    } else {
      wrong_type("stop", "a string or an array of strings", *v);
    }
    for (const auto& s : p.stop)
      if (s.empty()) bad("stop", "'stop' strings must not be empty");
  }
  if (const json* v = field(j, "stop_token_ids")) {
    if (!v->is_array()) wrong_type("stop_token_ids", "an array of integers", *v);
    for (size_t i = 0; i < v->size(); ++i) {
      const json& t = (*v)[i];
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > std::numeric_limits<int32_t>::max())
        bad(strcat("stop_token_ids[", i, "]"), "'stop_token_ids' entries must be non-negative token ids");
      p.stop_token_ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
  }
  if (auto v = get_bool(j, "ignore_eos")) p.ignore_eos = *v;
  parse_response_format(j, r);
  if (r.grammar && p.ignore_eos)
    bad("ignore_eos",
        "'ignore_eos' cannot be combined with a JSON response_format (the output ends when the value is complete)");
  if (auto v = get_int(j, "seed")) p.seed = static_cast<uint64_t>(*v);
  if (auto v = get_bool(j, "stream")) r.stream = *v;
  if (const json* v = field(j, "stream_options")) {
    if (!v->is_object()) wrong_type("stream_options", "an object", *v);
    if (!r.stream) bad("stream_options", "'stream_options' is only allowed with stream: true");
    if (const json* u = field(*v, "include_usage")) {
      if (!u->is_boolean()) wrong_type("stream_options.include_usage", "a boolean", *u);
      r.include_usage = u->get<bool>();
    }
  }
  if (auto v = get_bool(j, "return_token_ids")) r.return_token_ids = *v;
  if (const json* v = field(j, "user"); v && !v->is_string()) wrong_type("user", "a string", *v);
}

// Converts request JSON to a template value, checking the shape of one message.
jinja::Value message_value(const json& m, size_t i) {
  const std::string at = strcat("messages[", i, "]");
  if (!m.is_object()) wrong_type(at, "an object", m);
  const json* role = field(m, "role");
  if (!role) bad(at + ".role", strcat("'", at, ".role' is required"));
  if (!role->is_string()) wrong_type(at + ".role", "a string", *role);
  const std::string r = role->get<std::string>();
  if (r != "system" && r != "user" && r != "assistant" && r != "tool" && r != "developer")
    bad(at + ".role", strcat("'", at, ".role' must be one of system, developer, user, assistant, tool; got '", r, "'"));
  json copy = m;
  if (r == "developer") copy["role"] = "system";  // chat templates know "system"
  const json* content = field(m, "content");
  if (!content) {
    if (r != "assistant")
      bad(at + ".content", strcat("'", at, ".content' is required for role ", r));
    copy["content"] = "";
  } else if (content->is_array()) {
    // Content parts: only text is supported; joined into one string.
    std::string text;
    for (size_t k = 0; k < content->size(); ++k) {
      const json& part = (*content)[k];
      const std::string pat = strcat(at, ".content[", k, "]");
      if (!part.is_object()) wrong_type(pat, "an object", part);
      const json* t = field(part, "type");
      if (!t || !t->is_string() || t->get<std::string>() != "text")
        bad(pat + ".type", strcat("only text content parts are supported ('", pat, ".type' must be \"text\")"));
      const json* tx = field(part, "text");
      if (!tx || !tx->is_string()) wrong_type(pat + ".text", "a string", tx ? *tx : json());
      text += tx->get<std::string>();
    }
    copy["content"] = text;
  } else if (!content->is_string()) {
    wrong_type(at + ".content", "a string, an array of content parts or null", *content);
  }
  if (const json* tc = field(m, "tool_calls")) {
    if (!tc->is_array()) wrong_type(at + ".tool_calls", "an array", *tc);
    json calls = json::array();
    for (size_t k = 0; k < tc->size(); ++k) {
      const json& c = (*tc)[k];
      const std::string cat = strcat(at, ".tool_calls[", k, "]");
      if (!c.is_object()) wrong_type(cat, "an object", c);
      const json* fn = field(c, "function");
      if (!fn || !fn->is_object()) wrong_type(cat + ".function", "an object", fn ? *fn : json());
      const json* name = field(*fn, "name");
      if (!name || !name->is_string()) wrong_type(cat + ".function.name", "a string", name ? *name : json());
      json call = c;
      // Templates print arguments with tojson when they are a mapping; OpenAI sends a JSON string.
      if (const json* args = field(*fn, "arguments"); args && args->is_string()) {
        // A JSON string inside the body: the body's depth check did not see its nesting.
        if (json_depth(args->get<std::string>()) > kMaxDepth)
          bad(cat + ".function.arguments",
              strcat("'", cat, ".function.arguments' nests deeper than ", kMaxDepth, " levels"));
        try {
          json parsed = json::parse(args->get<std::string>());
          if (parsed.is_object()) call["function"]["arguments"] = parsed;
        } catch (const json::exception&) {
          bad(cat + ".function.arguments", strcat("'", cat, ".function.arguments' is not valid JSON"));
        }
      }
      calls.push_back(call);
    }
    copy["tool_calls"] = calls;
  }
  if (const json* tid = field(m, "tool_call_id"); tid && !tid->is_string())
    wrong_type(at + ".tool_call_id", "a string", *tid);
  return jinja::Value::from_json(copy.dump(-1, ' ', false, json::error_handler_t::replace));
}

// The endpoint's sampling defaults under the request's own fields.
void apply_defaults(CommonRequest& r, const engine::SamplingParams* d) {
  if (!d) return;
  engine::SamplingParams& p = r.sampling;
  p.temperature = d->temperature;
  p.top_p = d->top_p;
  p.top_k = d->top_k;
  p.min_p = d->min_p;
  p.repetition_penalty = d->repetition_penalty;
  p.max_tokens = d->max_tokens;
  p.min_tokens = d->min_tokens;
  r.max_tokens_default = true;
}

}  // namespace

ChatRequest parse_chat_request(std::string_view body, const engine::SamplingParams* defaults) {
  const json j = parse_body(body);
  ChatRequest r;
  apply_defaults(r, defaults);
  parse_common(j, r, true);
  const json* msgs = field(j, "messages");
  if (!msgs) bad("messages", "'messages' is required");
  if (!msgs->is_array()) wrong_type("messages", "an array", *msgs);
  if (msgs->empty()) bad("messages", "'messages' must contain at least one message");
  jinja::Array arr;
  for (size_t i = 0; i < msgs->size(); ++i) arr.push_back(message_value((*msgs)[i], i));
  r.messages = jinja::Value(std::move(arr));

  std::string tool_choice = "auto";
  std::string forced;  // tool_choice {"type": "function", "function": {"name": ...}}
  if (const json* v = field(j, "tool_choice")) {
    if (v->is_string()) {
      tool_choice = v->get<std::string>();
      if (tool_choice != "auto" && tool_choice != "none" && tool_choice != "required")
        bad("tool_choice",
            strcat("'tool_choice' must be \"auto\", \"none\" or \"required\", got \"", tool_choice, "\""));
    } else if (v->is_object()) {
      const json* ty = field(*v, "type");
      const json* fn = field(*v, "function");
      const json* nm = fn && fn->is_object() ? field(*fn, "name") : nullptr;
      if (!ty || !ty->is_string() || ty->get<std::string>() != "function" || !nm || !nm->is_string())
        bad("tool_choice",
            "'tool_choice' as an object must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
      tool_choice = "function";
      forced = nm->get<std::string>();
    } else {
      wrong_type("tool_choice", "a string or an object", *v);
    }
  }
  if ((tool_choice == "required" || tool_choice == "function") && r.grammar)
    bad("tool_choice", "a forced tool call cannot be combined with a JSON response_format");
  if (const json* v = field(j, "parallel_tool_calls"); v && !v->is_boolean())
    wrong_type("parallel_tool_calls", "a boolean", *v);
  if (const json* tools = field(j, "tools")) {
    if (!tools->is_array()) wrong_type("tools", "an array", *tools);
    for (size_t i = 0; i < tools->size(); ++i) {
      const json& t = (*tools)[i];
      const std::string at = strcat("tools[", i, "]");
      if (!t.is_object()) wrong_type(at, "an object", t);
      const json* ty = field(t, "type");
      if (!ty || !ty->is_string() || ty->get<std::string>() != "function")
        bad(at + ".type", strcat("'", at, ".type' must be \"function\""));
      const json* fn = field(t, "function");
      if (!fn || !fn->is_object()) wrong_type(at + ".function", "an object", fn ? *fn : json());
      const json* name = field(*fn, "name");
      if (!name || !name->is_string() || name->get<std::string>().empty())
        bad(at + ".function.name", strcat("'", at, ".function.name' must be a non-empty string"));
      if (const json* params = field(*fn, "parameters"); params && !params->is_object())
        wrong_type(at + ".function.parameters", "an object", *params);
    }
    if (!tools->empty() && tool_choice != "none") {
      r.tools = jinja::Value::from_json(tools->dump(-1, ' ', false, json::error_handler_t::replace));
      r.parse_tool_calls = true;
    }
    if (tool_choice == "required" || tool_choice == "function") {
      // Constrained decoding: the output is one call of the (named) tool, in the Qwen syntax.
      std::vector<std::pair<std::string, std::string>> allowed;
      for (const json& t : *tools) {
        const std::string name = t["function"]["name"].get<std::string>();
        if (tool_choice == "function" && name != forced) continue;
        const json* params = field(t["function"], "parameters");
        allowed.emplace_back(name, params ? params->dump() : "");
      }
      if (allowed.empty())
        bad("tool_choice", tool_choice == "function"
                               ? strcat("tool_choice names '", forced, "', which is not in 'tools'")
                               : std::string("tool_choice \"required\" needs 'tools'"));
      r.grammar = JsonGrammar::tool_call(allowed, "tools");
    }
  }
  if ((tool_choice == "required" || tool_choice == "function") && !r.grammar)
    bad("tool_choice", "a forced tool call needs 'tools'");
  if (r.grammar && r.sampling.ignore_eos) bad("ignore_eos", "'ignore_eos' cannot be combined with a forced tool call");
  if (const json* v = field(j, "chat_template_kwargs")) {
    if (!v->is_object()) wrong_type("chat_template_kwargs", "an object", *v);
    json rest = json::object();
    for (auto it = v->begin(); it != v->end(); ++it) {
      if (it.key() == "enable_thinking") {
        if (!it->is_boolean()) wrong_type("chat_template_kwargs.enable_thinking", "a boolean", *it);
        r.enable_thinking = it->get<bool>();
      } else if (it.key() == "messages" || it.key() == "tools" || it.key() == "add_generation_prompt") {
        bad("chat_template_kwargs." + it.key(), strcat("'", it.key(), "' cannot be set through chat_template_kwargs"));
      } else {
        rest[it.key()] = *it;
      }
    }
    if (!rest.empty()) r.template_kwargs = jinja::Value::from_json(rest.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  if (auto v = get_bool(j, "add_generation_prompt")) r.add_generation_prompt = *v;
  if (auto v = get_bool(j, "logprobs")) r.logprobs = *v;
  if (auto v = get_int(j, "top_logprobs")) {
    if (*v < 0 || *v > 20) bad("top_logprobs", strcat("'top_logprobs' must be in [0, 20], got ", *v));
    if (!r.logprobs && *v > 0) bad("top_logprobs", "'top_logprobs' requires 'logprobs': true");
    r.sampling.top_logprobs = *v;
  }
  if (r.sampling.min_tokens > r.sampling.max_tokens && r.max_tokens_set)
    bad("min_tokens", "'min_tokens' must not exceed max_tokens");
  return r;
}

CompletionRequest parse_completion_request(std::string_view body, const engine::SamplingParams* defaults) {
  const json j = parse_body(body);
  CompletionRequest r;
  apply_defaults(r, defaults);
  parse_common(j, r, false);
  if (auto v = get_bool(j, "echo"); v && *v) bad("echo", "'echo' is not supported");
  if (const json* v = field(j, "suffix")) {
    if (!v->is_string()) wrong_type("suffix", "a string", *v);
    if (!v->get<std::string>().empty()) bad("suffix", "'suffix' is not supported");
  }
  const json* pr = field(j, "prompt");
  if (!pr) bad("prompt", "'prompt' is required");
  auto ids_of = [&](const json& a, const std::string& at) {
    std::vector<int32_t> ids;
    for (size_t i = 0; i < a.size(); ++i) {
      const json& t = a[i];
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > std::numeric_limits<int32_t>::max())
        bad(at, strcat("'", at, "' token ids must be non-negative integers; entry ", i, " is ", t.dump()));
      ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
    if (ids.empty()) bad(at, strcat("'", at, "' must not be empty"));
    return ids;
  };
  if (pr->is_string()) {
    r.text_prompts.push_back(pr->get<std::string>());
  } else if (pr->is_array()) {
    if (pr->empty()) bad("prompt", "'prompt' must not be empty");
    const json& first = (*pr)[0];
    if (first.is_string()) {
      for (size_t i = 0; i < pr->size(); ++i) {
        if (!(*pr)[i].is_string()) wrong_type(strcat("prompt[", i, "]"), "a string", (*pr)[i]);
        r.text_prompts.push_back((*pr)[i].get<std::string>());
      }
    } else if (first.is_array()) {
      for (size_t i = 0; i < pr->size(); ++i) {
        if (!(*pr)[i].is_array()) wrong_type(strcat("prompt[", i, "]"), "an array of token ids", (*pr)[i]);
        r.token_prompts.push_back(ids_of((*pr)[i], strcat("prompt[", i, "]")));
      }
    } else {
      r.token_prompts.push_back(ids_of(*pr, "prompt"));
    }
  } else {
    wrong_type("prompt", "a string, an array of strings, or token ids", *pr);
  }
  if (r.text_prompts.size() + r.token_prompts.size() > 256) bad("prompt", "at most 256 prompts per request");
  if (auto v = get_int(j, "logprobs")) {
    if (*v < 0 || *v > 20) bad("logprobs", strcat("'logprobs' must be in [0, 20], got ", *v));
    r.logprobs = *v;
    r.sampling.top_logprobs = *v;
  } else if (const json* b = field(j, "logprobs"); b) {
    wrong_type("logprobs", "an integer", *b);
  }
  if (r.sampling.min_tokens > r.sampling.max_tokens && r.max_tokens_set)
    bad("min_tokens", "'min_tokens' must not exceed max_tokens");
  return r;
}

void fit_to_context(CommonRequest& r, int64_t prompt_len, int64_t max_model_len, const std::string& prompt_param) {
  if (prompt_len >= max_model_len)
    throw ApiError(400,
                   strcat("This model's maximum context length is ", max_model_len, " tokens; the prompt has ",
                          prompt_len, " tokens, which leaves no room to generate"),
                   prompt_param, "context_length_exceeded");
  const int64_t room = max_model_len - prompt_len;
  if (r.max_tokens_set) {
    if (r.sampling.max_tokens > room)
      throw ApiError(400,
                     strcat("This model's maximum context length is ", max_model_len, " tokens; the prompt has ",
                            prompt_len, " tokens and max_tokens asks for ", r.sampling.max_tokens,
                            " more (at most ", room, " fit)"),
                     "max_tokens", "context_length_exceeded");
  } else if (r.max_tokens_default) {
    r.sampling.max_tokens = std::min(r.sampling.max_tokens, room);
  } else {
    r.sampling.max_tokens = room;
  }
  if (r.sampling.min_tokens > r.sampling.max_tokens)
    throw ApiError(400, strcat("'min_tokens' (", r.sampling.min_tokens, ") exceeds the ", r.sampling.max_tokens,
                               " tokens that fit in the context"),
                   "min_tokens");
}

std::string error_body(const ApiError& e) {
  json err = {{"message", e.what()},
              {"type", e.type},
              {"param", e.param.empty() ? json(nullptr) : json(e.param)},
              {"code", e.code.empty() ? json(nullptr) : json(e.code)}};
  return json{{"error", err}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace trinity::server
