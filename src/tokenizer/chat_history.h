// Token-in / token-out chat history: the record of the model calls of one scope (one explorer run,
// one served conversation) with the exact ids that were sampled, and re-rendering a conversation so
// that the model's own earlier assistant turns keep those ids.
//
// Why: an agent sends the whole conversation back each turn; rendering it again with the chat
// template does not give back the sampled ids (BPE may split the text differently, templates strip
// `<think>` blocks of earlier turns, tool calls are re-serialized). Then the new prompt does not
// extend the previous prompt + response, and the calls cannot be trained as one trajectory.
// splice() finds the latest assistant message that equals a recorded answer (same content, same
// tool calls) whose preceding messages render exactly as that call's request did, and builds the
// prompt as  recorded prompt ids + sampled ids + ids of the text the template renders after that
// assistant turn. Everything before the splice point is the recorded prompt, itself spliced, so a
// conversation that the agent only appends to stays consistent turn after turn.
//
// Lives in the tokenizer layer because it is chat-template rendering at the token level; the server
// records into it and workflows turn it into experiences (workflow/history.h).
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/chat.h"

namespace trinity::tok {

// One model call (one sample of it when n > 1).
struct RecordedCall {
  std::string id;                   // response id ("chatcmpl-...", "cmpl-...", "call-3")
  int64_t choice = 0;               // sample index within the request
  std::vector<int32_t> prompt_ids;  // [P] exactly what the engine was given
  std::vector<int32_t> ids;         // [R] sampled ids, including the stop token that ended it
  std::vector<float> logprobs;      // [R] rollout logprobs of `ids`
  int64_t model_version = 0;
  std::string finish_reason;      // "stop" | "length" | ...
  double start = 0, seconds = 0;  // wall-clock start (s since epoch) and duration
  std::string endpoint;           // "chat" | "completions" | "responses" | "generate"
  bool spliced = false;           // the prompt reused earlier sampled ids (splice())
  // Chat calls made with add_generation_prompt: what splice() matches later.
  std::string render_key;  // fresh template rendering of the request's messages
  std::string answer_key;  // assistant_key() of the answer as returned to the client
};

// The identity of an assistant message for matching: its content and its tool calls (name and
// arguments, arguments compared as JSON values so re-serialization does not matter).
// `calls`: (name, arguments JSON text) pairs.
std::string assistant_key(std::string_view content, const std::vector<std::pair<std::string, std::string>>& calls);
// Same for a message object {"role": "assistant", "content": ..., "tool_calls": [...]} (content
// may be null; arguments a JSON string or an object).
std::string assistant_key(const jinja::Value& message);

class ChatHistory {
 public:
  // rolling = false: add() refuses the call after max_calls (one run: a runaway agent); true: the
  // oldest call is forgotten instead (serve mode's long-lived history, used only for splicing).
  explicit ChatHistory(size_t max_calls = 4096, bool rolling = false) : max_calls_(max_calls), rolling_(rolling) {}

  // Appends a call. ValueError once a non-rolling history holds max_calls calls.
  void add(RecordedCall call);
  std::vector<RecordedCall> calls() const;
  // Returns the calls and clears the history (Trinity's extract_experience_from_history).
  std::vector<RecordedCall> take();
  size_t size() const;

  struct Splice {
    std::vector<int32_t> ids;  // the prompt
    std::string via;           // id of the call whose ids were reused
  };
  // The prompt ids of `messages` rendered with `opt` (add_generation_prompt must be set) reusing
  // the sampled ids of the latest matching assistant turn; nullopt when none matches (`why` says
  // why, for debug logs).
  std::optional<Splice> splice(const ChatFormatter& chat, const jinja::Value& messages, const ChatOptions& opt,
                               std::string* why = nullptr) const;

 private:
  mutable std::mutex mu_;
  std::deque<RecordedCall> calls_;
  size_t max_calls_;
  bool rolling_;
};

}  // namespace trinity::tok
