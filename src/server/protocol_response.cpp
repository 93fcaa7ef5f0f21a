// Response and stream-chunk JSON for the OpenAI endpoints (see protocol.h). token_ids and
// logprobs list the same sampled tokens one to one, including the stop token that ended a
// generation (the trainer trains on it); text never contains that stop token.
#include <nlohmann/json.hpp>

#include "server/json_util.h"
#include "server/protocol.h"

namespace trinity::server {

namespace {

using json = nlohmann::ordered_json;

using json_util::dump;
using json_util::lp_json;

json usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

// Chat logprobs entries (OpenAI ChatCompletionTokenLogprob) for `ids`.
json chat_logprob_entries(const std::vector<int32_t>& ids, const std::vector<float>& lps,
                          const std::vector<std::vector<std::pair<int32_t, float>>>& tops, size_t begin,
                          size_t end, const TokenDescriber& describe) {
  json out = json::array();
  for (size_t i = begin; i < end; ++i) {
    const TokenText t = describe(ids[i]);
    json e = {{"token", t.text}, {"logprob", lp_json(lps[i])}, {"bytes", t.bytes}};
    json top = json::array();
    if (i < tops.size())
      for (const auto& [id, lp] : tops[i]) {
        const TokenText a = describe(id);
        top.push_back({{"token", a.text}, {"logprob", lp_json(lp)}, {"bytes", a.bytes}});
      }
    e["top_logprobs"] = top;
    out.push_back(std::move(e));
  }
  return out;
}

// Legacy completions logprobs object {tokens, token_logprobs, top_logprobs, text_offset}.
json completion_logprobs(const std::vector<int32_t>& ids, const std::vector<float>& lps,
                         const std::vector<std::vector<std::pair<int32_t, float>>>& tops, size_t begin, size_t end,
                         size_t text_offset, const TokenDescriber& describe) {
  json tokens = json::array(), token_lps = json::array(), top = json::array(), offsets = json::array();
  size_t off = text_offset;
  for (size_t i = begin; i < end; ++i) {
    const TokenText t = describe(ids[i]);
    tokens.push_back(t.text);
    token_lps.push_back(lp_json(lps[i]));
    json alt = json::object();
    if (i < tops.size())
      for (const auto& [id, lp] : tops[i]) alt[describe(id).text] = lp_json(lp);
    top.push_back(alt);
    offsets.push_back(off);
    off += t.text.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", token_lps}, {"top_logprobs", top}, {"text_offset", offsets}};
}

json tool_calls_json(const std::vector<ToolCall>& calls, bool with_index) {
  json arr = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json c = {{"id", calls[i].id},
              {"type", "function"},
              {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (with_index) c["index"] = i;
    arr.push_back(std::move(c));
  }
  return arr;
}

}  // namespace

std::string chat_response(const ResponseMeta& meta, const ChatRequest& req, const std::vector<int32_t>& prompt_ids,
                          const std::vector<ChatChoice>& choices, const TokenDescriber& describe) {
  json out = {{"id", meta.id}, {"object", "chat.completion"}, {"created", meta.created}, {"model", meta.model}};
  json arr = json::array();
  int64_t completion_tokens = 0;
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChatChoice& ch = choices[i];
    const engine::Completion& c = *ch.completion;
    completion_tokens += static_cast<int64_t>(c.token_ids.size());
    json msg = {{"role", "assistant"}, {"content", ch.content ? json(*ch.content) : json(nullptr)}};
    if (!ch.tool_calls.empty()) msg["tool_calls"] = tool_calls_json(ch.tool_calls, false);
    json choice = {{"index", i}, {"message", msg}, {"logprobs", nullptr}, {"finish_reason", ch.finish_reason}};
    if (req.logprobs)
      choice["logprobs"] = {{"content", chat_logprob_entries(c.token_ids, c.logprobs, c.top_logprobs, 0,
                                                             c.token_ids.size(), describe)}};
    if (req.return_token_ids) {
      choice["token_ids"] = c.token_ids;
      choice["model_version"] = c.model_version;
    }
    arr.push_back(std::move(choice));
  }
  out["choices"] = arr;
  out["usage"] = usage_json(static_cast<int64_t>(prompt_ids.size()), completion_tokens);
  if (req.return_token_ids) out["prompt_token_ids"] = prompt_ids;
  return dump(out);
}

std::string completion_response(const ResponseMeta& meta, const CompletionRequest& req,
                                const std::vector<std::vector<int32_t>>& prompt_ids,
                                const std::vector<const engine::Completion*>& completions,
                                const TokenDescriber& describe) {
  json out = {{"id", meta.id}, {"object", "text_completion"}, {"created", meta.created}, {"model", meta.model}};
  json arr = json::array();
  int64_t prompt_tokens = 0, completion_tokens = 0;
  for (const auto& p : prompt_ids) prompt_tokens += static_cast<int64_t>(p.size());
  const size_t n = static_cast<size_t>(req.sampling.n);
  for (size_t i = 0; i < completions.size(); ++i) {
    const engine::Completion& c = *completions[i];
    completion_tokens += static_cast<int64_t>(c.token_ids.size());
    json choice = {{"index", i}, {"text", c.text}, {"logprobs", nullptr}, {"finish_reason", c.finish_reason}};
    if (req.logprobs >= 0)
      choice["logprobs"] = completion_logprobs(c.token_ids, c.logprobs, c.top_logprobs, 0, c.token_ids.size(), 0, describe);
    if (req.return_token_ids) {
      choice["token_ids"] = c.token_ids;
      choice["prompt_token_ids"] = prompt_ids[i / n];
      choice["model_version"] = c.model_version;
    }
    arr.push_back(std::move(choice));
  }
  out["choices"] = arr;
  out["usage"] = usage_json(prompt_tokens, completion_tokens);
  if (req.return_token_ids && prompt_ids.size() == 1) out["prompt_token_ids"] = prompt_ids[0];
  return dump(out);
}

std::string chat_chunk(const ResponseMeta& meta, const ChatRequest& req, const ChunkDelta& d,
                       const TokenDescriber& describe) {
  json delta = json::object();
  if (d.role) delta["role"] = "assistant";
  if (d.content) delta["content"] = *d.content;
  if (!d.tool_calls.empty()) delta["tool_calls"] = tool_calls_json(d.tool_calls, true);
  json choice = {{"index", d.index}, {"delta", delta}, {"logprobs", nullptr},
                 {"finish_reason", d.finish_reason ? json(*d.finish_reason) : json(nullptr)}};
  if (req.logprobs && !d.token_ids.empty())
    choice["logprobs"] = {{"content", chat_logprob_entries(d.token_ids, d.logprobs, d.top_logprobs, 0,
                                                           d.token_ids.size(), describe)}};
  if (req.return_token_ids) choice["token_ids"] = d.token_ids;
  json out = {{"id", meta.id}, {"object", "chat.completion.chunk"}, {"created", meta.created},
              {"model", meta.model}, {"choices", json::array({choice})}};
  if (req.return_token_ids && d.prompt_token_ids) out["prompt_token_ids"] = *d.prompt_token_ids;
  return dump(out);
}

std::string completion_chunk(const ResponseMeta& meta, const CompletionRequest& req, const ChunkDelta& d,
                             const TokenDescriber& describe) {
  json choice = {{"index", d.index}, {"text", d.content.value_or("")}, {"logprobs", nullptr},
                 {"finish_reason", d.finish_reason ? json(*d.finish_reason) : json(nullptr)}};
  if (req.logprobs >= 0 && !d.token_ids.empty())
    choice["logprobs"] = completion_logprobs(d.token_ids, d.logprobs, d.top_logprobs, 0, d.token_ids.size(), 0, describe);
  if (req.return_token_ids) {
    choice["token_ids"] = d.token_ids;
    if (d.prompt_token_ids) choice["prompt_token_ids"] = *d.prompt_token_ids;
  }
  json out = {{"id", meta.id}, {"object", "text_completion"}, {"created", meta.created},
              {"model", meta.model}, {"choices", json::array({choice})}};
  return dump(out);
}

std::string usage_chunk(const ResponseMeta& meta, const char* object, int64_t prompt_tokens,
                        int64_t completion_tokens) {
  json out = {{"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model},
              {"choices", json::array()}, {"usage", usage_json(prompt_tokens, completion_tokens)}};
  return dump(out);
}

}  // namespace trinity::server
