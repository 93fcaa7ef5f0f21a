// OpenAI API protocol for `trinity serve`: request parsing and validation (chat completions and
// legacy completions), OpenAI-shaped errors, and response / stream-chunk JSON. Parsing is strict:
// a wrong-typed or out-of-range field is an ApiError(400) whose `param` names the field
// ("temperature", "messages[2].content"); unknown fields are ignored (clients send many), but a
// known field asking for a feature trinity lacks (presence_penalty != 0, echo, logit_bias, ...)
// is refused rather than silently ignored. JSON (nlohmann) stays inside the .cpp files.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "server/json_grammar.h"
#include "tokenizer/jinja.h"
#include "tokenizer/tool_call_parse.h"

namespace trinity::server {

// An error answered to the client as {"error": {"message", "type", "param", "code"}}.
class ApiError : public std::runtime_error {
 public:
  ApiError(int http_status, const std::string& message, std::string param_name = "", std::string error_code = "",
           std::string error_type = "invalid_request_error")
      : std::runtime_error(message), status(http_status), param(std::move(param_name)), code(std::move(error_code)),
        type(std::move(error_type)) {}
  int status;
  std::string param;  // "" -> null
  std::string code;   // "" -> null
  std::string type;
};

// The JSON body of an error response.
std::string error_body(const ApiError& e);

// Fields both endpoints share.
struct CommonRequest {
  std::string model;  // "" when absent
  engine::SamplingParams sampling;
  bool max_tokens_set = false;   // max_tokens / max_completion_tokens given
  bool max_tokens_default = false;  // max_tokens came from the endpoint's defaults: capped to the context
  bool stream = false;
  bool include_usage = false;    // stream_options.include_usage
  bool return_token_ids = false; // RL extension: prompt_token_ids + token_ids per choice
  // response_format json_object / json_schema: the grammar the output must follow (null: free text).
  std::shared_ptr<const JsonGrammar> grammar;
};

struct ChatRequest : CommonRequest {
  tok::jinja::Value messages;         // list of message objects, as the chat template expects
  tok::jinja::Value tools;            // list, or undefined (none given or tool_choice "none")
  bool parse_tool_calls = false;      // tools given and tool_choice "auto"
  std::optional<bool> enable_thinking;  // chat_template_kwargs.enable_thinking
  tok::jinja::Value template_kwargs;  // the other chat_template_kwargs (object) or undefined
  bool add_generation_prompt = true;
  bool logprobs = false;
};

struct CompletionRequest : CommonRequest {
  std::vector<std::string> text_prompts;            // prompt given as text (one or a batch)
  std::vector<std::vector<int32_t>> token_prompts;  // prompt given as token ids
  int64_t logprobs = -1;                            // -1: none; k: sampled token + k alternatives
};

// Throw ApiError(400) naming the field. `defaults`: sampling for the fields the request leaves out
// (a recording endpoint's rollout settings); null: OpenAI's defaults.
ChatRequest parse_chat_request(std::string_view body, const engine::SamplingParams* defaults = nullptr);
CompletionRequest parse_completion_request(std::string_view body, const engine::SamplingParams* defaults = nullptr);

// Sets sampling.max_tokens from the context: refuses a prompt that leaves no room (param
// `prompt_param`, code context_length_exceeded) and an explicit max_tokens that overflows it;
// without an explicit max_tokens, generation may use the rest of the context.
void fit_to_context(CommonRequest& r, int64_t prompt_len, int64_t max_model_len,
                    const std::string& prompt_param);

// One parsed tool call.
using ToolCall = tok::ToolCall;  // id "call_...", name, arguments (JSON text of the arguments object)

// What the server needs from the tokenizer to describe tokens in logprobs.
struct TokenText {
  std::string text;                // decoded text of the single token (partial UTF-8 -> U+FFFD)
  std::vector<uint8_t> bytes;      // raw bytes the token contributes
};
using TokenTextFn = TokenText (*)(const void* ctx, int32_t id);
struct TokenDescriber {
  const void* ctx = nullptr;
  TokenTextFn fn = nullptr;
  TokenText operator()(int32_t id) const { return fn(ctx, id); }
};

struct ResponseMeta {
  std::string id;      // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;
  std::string model;
};

// Final choice of a chat completion after tool-call parsing.
struct ChatChoice {
  const engine::Completion* completion = nullptr;
  std::optional<std::string> content;  // null when the message is only tool calls
  std::vector<ToolCall> tool_calls;
  std::string finish_reason;
};

// Non-streaming chat.completion body.
std::string chat_response(const ResponseMeta& meta, const ChatRequest& req,
                          const std::vector<int32_t>& prompt_ids, const std::vector<ChatChoice>& choices,
                          const TokenDescriber& describe);
// Non-streaming text_completion body; `prompt_ids[p]` and completions p*n .. p*n+n-1 per prompt.
std::string completion_response(const ResponseMeta& meta, const CompletionRequest& req,
                                const std::vector<std::vector<int32_t>>& prompt_ids,
                                const std::vector<const engine::Completion*>& completions,
                                const TokenDescriber& describe);

// Streaming pieces (each returns one JSON object; the server frames it as "data: ...\n\n").
struct ChunkDelta {
  int64_t index = 0;
  bool role = false;                         // first chunk of a choice: role "assistant"
  std::optional<std::string> content;        // content text delta
  std::vector<ToolCall> tool_calls;
  std::vector<int32_t> token_ids;            // tokens this chunk covers (logprobs / token_ids)
  std::vector<float> logprobs;
  std::vector<std::vector<std::pair<int32_t, float>>> top_logprobs;
  std::optional<std::string> finish_reason;
  const std::vector<int32_t>* prompt_token_ids = nullptr;  // set on a choice's first chunk
};
std::string chat_chunk(const ResponseMeta& meta, const ChatRequest& req, const ChunkDelta& d,
                       const TokenDescriber& describe);
std::string completion_chunk(const ResponseMeta& meta, const CompletionRequest& req, const ChunkDelta& d,
                             const TokenDescriber& describe);
// Final usage-only chunk (stream_options.include_usage).
std::string usage_chunk(const ResponseMeta& meta, const char* object, int64_t prompt_tokens,
                        int64_t completion_tokens);

}  // namespace trinity::server
