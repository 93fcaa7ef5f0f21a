// Responses API output (see responses.h): the response object and its stream events. Output items:
// a message ({type: "message", role: "assistant", content: [{type: "output_text", text, annotations,
// logprobs}]}) unless the answer is only tool calls, then one function_call item per parsed call.
// Streams send the same items as the final object: response.created, response.in_progress, the
// message's output_item.added / content_part.added / output_text.delta... / output_text.done /
// content_part.done / output_item.done, each call's output_item.added / function_call_arguments.delta
// / .done / output_item.done, then response.completed (or response.incomplete).
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "server/json_util.h"
#include "server/responses.h"
#include "server/tool_calls.h"

namespace trinity::server {

namespace {

using json = nlohmann::ordered_json;

using json_util::dump;
using json_util::lp_json;

std::string hex_id(const std::string& prefix) {
  return prefix + new_tool_call_id().substr(5);
}

json logprob_entries(const std::vector<int32_t>& ids, const std::vector<float>& lps,
                     const std::vector<std::vector<std::pair<int32_t, float>>>& tops, const TokenDescriber& describe) {
  json out = json::array();
  for (size_t i = 0; i < ids.size(); ++i) {
    const TokenText t = describe(ids[i]);
    json top = json::array();
    if (i < tops.size())
      for (const auto& [id, lp] : tops[i]) {
        const TokenText a = describe(id);
        top.push_back({{"token", a.text}, {"logprob", lp_json(lp)}, {"bytes", a.bytes}});
      }
    out.push_back({{"token", t.text},
                   {"logprob", lp_json(i < lps.size() ? lps[i] : 0.0f)},
                   {"bytes", t.bytes},
                   {"top_logprobs", top}});
  }
  return out;
}

bool all_space(const std::string& s) {
  return s.find_first_not_of(" \t\r\n") == std::string::npos;
}

}  // namespace

struct ResponsesWriter::State {
  ResponseMeta meta;
  std::shared_ptr<const ResponsesRequest> req;
  TokenDescriber describe;
  int64_t prompt_tokens = 0;
  json echo;
  int64_t seq = 0;
  bool failed = false;
  // Streaming: the message item, once opened (non-space text arrived).
  std::string msg_id = hex_id("msg_");
  bool msg_open = false;
  std::string streamed;  // text sent in output_text.delta events
  std::string pending;   // text not sent yet (only spaces so far, before the message opened)
  ToolCallStreamFilter filter;
  std::vector<int32_t> lp_ids;  // tokens whose logprobs the next delta carries
  std::vector<float> lp_vals;
  std::vector<std::vector<std::pair<int32_t, float>>> lp_tops;
  std::vector<std::pair<std::string, std::string>> items;

  // The final output of a generation: message text (nullopt: no message item) and tool calls.
  struct Output {
    std::optional<std::string> text;
    std::vector<ToolCall> calls;
  };
  Output output_of(const engine::Completion& c) const {
    Output o;
    if (req->chat.parse_tool_calls) {
      ParsedToolCalls p = parse_tool_calls(c.text);
      o.calls = std::move(p.calls);
      if (o.calls.empty())
        o.text = c.text;
      else if (p.content)
        o.text = *p.content;
    } else {
      o.text = c.text;
    }
    return o;
  }

  json response_json(const char* status, const json& output, const json& usage, const json& incomplete,
                     const json& error) const {
    json r = {{"id", meta.id},
              {"object", "response"},
              {"created_at", meta.created},
              {"status", status},
              {"background", false},
              {"error", error},
              {"incomplete_details", incomplete},
              {"instructions", echo["instructions"]},
              {"max_output_tokens", echo["max_output_tokens"]},
              {"max_tool_calls", nullptr},
              {"model", meta.model},
              {"output", output},
              {"parallel_tool_calls", echo["parallel_tool_calls"]},
              {"previous_response_id", nullptr},
              {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
              {"service_tier", "default"},
              {"store", echo["store"]},
              {"temperature", echo["temperature"]},
              {"text", echo["text"]},
              {"tool_choice", echo["tool_choice"]},
              {"tools", echo["tools"]},
              {"top_logprobs", echo["top_logprobs"]},
              {"top_p", echo["top_p"]},
              {"truncation", "disabled"},
              {"usage", usage},
              {"user", echo["user"]},
              {"metadata", echo["metadata"]}};
    return r;
  }

  json usage_json(int64_t output_tokens) const {
    return {{"input_tokens", prompt_tokens},
            {"input_tokens_details", {{"cached_tokens", 0}}},
            {"output_tokens", output_tokens},
            {"output_tokens_details", {{"reasoning_tokens", 0}}},
            {"total_tokens", prompt_tokens + output_tokens}};
  }

  json text_part(const std::string& text, const json& logprobs) const {
    return {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}, {"logprobs", logprobs}};
  }
  json message_item(const std::string& text, const json& logprobs, const char* status) const {
    return {{"id", msg_id},
            {"type", "message"},
            {"status", status},
            {"role", "assistant"},
            {"content", json::array({text_part(text, logprobs)})}};
  }
  static json call_item(const std::string& id, const ToolCall& c, const std::string& args, const char* status) {
    return {{"id", id},          {"type", "function_call"}, {"status", status},
            {"arguments", args}, {"call_id", c.id},         {"name", c.name}};
  }

  // The output items and the response status of a finished generation.
  struct Final {
    json output = json::array();
    const char* status = "completed";
    json incomplete = nullptr;
    std::optional<std::string> text;
    json logprobs = json::array();
    std::vector<ToolCall> calls;
    std::vector<std::string> call_ids;
  };
  Final final_of(const engine::Completion& c) {
    Final f;
    Output o = output_of(c);
    f.text = o.text;
    f.calls = std::move(o.calls);
    if (req->chat.logprobs && f.calls.empty())
      f.logprobs = logprob_entries(c.token_ids, c.logprobs, c.top_logprobs, describe);
    if (c.finish_reason != "stop") {
      f.status = "incomplete";
      f.incomplete = {{"reason", c.finish_reason == "length" ? std::string("max_output_tokens") : c.finish_reason}};
    }
    const char* item_status = f.calls.empty() && c.finish_reason != "stop" ? "incomplete" : "completed";
    if (f.text) f.output.push_back(message_item(*f.text, f.logprobs, item_status));
    for (const auto& call : f.calls) {
      f.call_ids.push_back(hex_id("fc_"));
      f.output.push_back(call_item(f.call_ids.back(), call, call.arguments, "completed"));
    }
    items.clear();
    for (const auto& it : f.output) items.emplace_back(it["id"].get<std::string>(), dump(it));
    return f;
  }

  void event(const char* type, json body, std::vector<std::string>& out) {
    json e = {{"type", type}};
    for (auto it = body.begin(); it != body.end(); ++it) e[it.key()] = *it;
    e["sequence_number"] = seq++;
    out.push_back(strcat("event: ", type, "\ndata: ", dump(e)));
  }

  void open_message(std::vector<std::string>& out) {
    msg_open = true;
    event("response.output_item.added",
          {{"output_index", 0},
           {"item",
            {{"id", msg_id},
             {"type", "message"},
             {"status", "in_progress"},
             {"role", "assistant"},
             {"content", json::array()}}}},
          out);
    event("response.content_part.added",
          {{"item_id", msg_id}, {"output_index", 0}, {"content_index", 0}, {"part", text_part("", json::array())}},
          out);
  }

  void send_delta(const std::string& text, std::vector<std::string>& out) {
    json lps = json::array();
    if (req->chat.logprobs) lps = logprob_entries(lp_ids, lp_vals, lp_tops, describe);
    lp_ids.clear();
    lp_vals.clear();
    lp_tops.clear();
    streamed += text;
    event("response.output_text.delta",
          {{"item_id", msg_id}, {"output_index", 0}, {"content_index", 0}, {"delta", text}, {"logprobs", lps}}, out);
  }
};

ResponsesWriter::ResponsesWriter(ResponseMeta meta, std::shared_ptr<const ResponsesRequest> req,
                                 TokenDescriber describe, int64_t prompt_tokens)
    : s_(std::make_unique<State>()) {
  s_->meta = std::move(meta);
  s_->req = std::move(req);
  s_->describe = describe;
  s_->prompt_tokens = prompt_tokens;
  s_->echo = json::parse(s_->req->echo);
}

ResponsesWriter::~ResponsesWriter() = default;

bool ResponsesWriter::failed() const {
  return s_->failed;
}

const std::vector<std::pair<std::string, std::string>>& ResponsesWriter::items() const {
  return s_->items;
}

std::string ResponsesWriter::response(const engine::Completion& c) {
  State::Final f = s_->final_of(c);
  return dump(s_->response_json(f.status, f.output, s_->usage_json(static_cast<int64_t>(c.token_ids.size())),
                                f.incomplete, nullptr));
}

void ResponsesWriter::start(std::vector<std::string>& out) {
  const json r = s_->response_json("in_progress", json::array(), nullptr, nullptr, nullptr);
  s_->event("response.created", {{"response", r}}, out);
  s_->event("response.in_progress", {{"response", r}}, out);
}

void ResponsesWriter::on_event(const engine::StreamEvent& e, std::vector<std::string>& out) {
  State& s = *s_;
  if (e.token >= 0 && s.req->chat.logprobs) {
    s.lp_ids.push_back(e.token);
    s.lp_vals.push_back(e.logprob);
    s.lp_tops.push_back(e.top);
  }
  const std::string text = s.req->chat.parse_tool_calls ? s.filter.push(e.text_delta) : e.text_delta;
  if (text.empty()) return;
  if (!s.msg_open) {
    // Text before a tool call that is only spaces is no message (as parse_tool_calls decides).
    s.pending += text;
    if (s.req->chat.parse_tool_calls && all_space(s.pending)) return;
    s.open_message(out);
    const std::string p = std::move(s.pending);
    s.pending.clear();
    s.send_delta(p, out);
    return;
  }
  s.send_delta(text, out);
}

void ResponsesWriter::finish(const engine::Completion& c, std::vector<std::string>& out) {
  State& s = *s_;
  State::Final f = s.final_of(c);
  int64_t index = 0;
  if (f.text) {
    if (!s.msg_open) s.open_message(out);
    // The rest of the text (held back as a possible tool-call start, or leading spaces).
    if (f.text->size() > s.streamed.size() && f.text->compare(0, s.streamed.size(), s.streamed) == 0)
      s.send_delta(f.text->substr(s.streamed.size()), out);
    const json& item = f.output[0];
    const json& part = item["content"][0];
    s.event("response.output_text.done",
            {{"item_id", s.msg_id},
             {"output_index", 0},
             {"content_index", 0},
             {"text", part["text"]},
             {"logprobs", part["logprobs"]}},
            out);
    s.event("response.content_part.done",
            {{"item_id", s.msg_id}, {"output_index", 0}, {"content_index", 0}, {"part", part}}, out);
    s.event("response.output_item.done", {{"output_index", 0}, {"item", item}}, out);
    index = 1;
  }
  for (size_t i = 0; i < f.calls.size(); ++i, ++index) {
    const ToolCall& call = f.calls[i];
    const std::string& id = f.call_ids[i];
    s.event("response.output_item.added",
            {{"output_index", index}, {"item", State::call_item(id, call, "", "in_progress")}}, out);
    s.event("response.function_call_arguments.delta",
            {{"item_id", id}, {"output_index", index}, {"delta", call.arguments}}, out);
    s.event("response.function_call_arguments.done",
            {{"item_id", id}, {"output_index", index}, {"name", call.name}, {"arguments", call.arguments}}, out);
    s.event("response.output_item.done", {{"output_index", index}, {"item", f.output[static_cast<size_t>(index)]}},
            out);
  }
  const bool complete = std::string(f.status) == "completed";
  s.event(complete ? "response.completed" : "response.incomplete",
          {{"response", s.response_json(f.status, f.output, s.usage_json(static_cast<int64_t>(c.token_ids.size())),
                                        f.incomplete, nullptr)}},
          out);
}

void ResponsesWriter::fail(const ApiError& e, std::vector<std::string>& out) {
  State& s = *s_;
  s.failed = true;
  const std::string code = e.code.empty() ? (e.status >= 500 ? "server_error" : "invalid_request") : e.code;
  s.event("error", {{"code", code}, {"message", e.what()}, {"param", e.param.empty() ? json(nullptr) : json(e.param)}},
          out);
  s.event("response.failed",
          {{"response",
            s.response_json("failed", json::array(), nullptr, nullptr, {{"code", code}, {"message", e.what()}})}},
          out);
}

}  // namespace trinity::server
