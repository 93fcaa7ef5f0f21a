// ChatHistory: recorded calls and the splice of sampled ids into re-rendered conversations (see
// chat_history.h).
#include "tokenizer/chat_history.h"

#include <algorithm>

#include "core/error.h"

namespace trinity::tok {

namespace {

// Arguments compared as JSON values: parsed and dumped with sorted keys; text that is not JSON
// compares as itself.
std::string canonical_arguments(std::string_view text) {
  try {
    return jinja::Value::from_json(std::string(text)).to_json(-1, true);
  } catch (const Error&) {
    return std::string(text);
  }
}

const std::string kSplicePlaceholder = "\x01trinity-splice-5b7e\x01";

}  // namespace

std::string assistant_key(std::string_view content, const std::vector<std::pair<std::string, std::string>>& calls) {
  std::string k(content);
  for (const auto& [name, args] : calls) {
    k += '\x1e';
    k += name;
    k += '\x1f';
    k += canonical_arguments(args);
  }
  return k;
}

std::string assistant_key(const jinja::Value& message) {
  std::string content;
  if (const jinja::Value* c = message.find("content"); c && c->is_string()) content = c->as_string();
  std::vector<std::pair<std::string, std::string>> calls;
  if (const jinja::Value* tc = message.find("tool_calls"); tc && tc->is_array()) {
    for (const auto& call : tc->array()) {
      const jinja::Value* fn = call.is_object() ? call.find("function") : nullptr;
      if (!fn || !fn->is_object()) continue;
      const jinja::Value* name = fn->find("name");
      const jinja::Value* args = fn->find("arguments");
      std::string a = !args ? "{}" : args->is_string() ? args->as_string() : args->to_json(-1, true);
      calls.emplace_back(name && name->is_string() ? name->as_string() : "", std::move(a));
    }
  }
  return assistant_key(content, calls);
}

void ChatHistory::add(RecordedCall call) {
  std::lock_guard<std::mutex> l(mu_);
  if (calls_.size() >= max_calls_) {
    if (!rolling_)
      throw ValueError("history",
                       strcat("more than ", max_calls_, " model calls recorded in one run; the agent is looping"));
    calls_.pop_front();
  }
  calls_.push_back(std::move(call));
}

std::vector<RecordedCall> ChatHistory::calls() const {
  std::lock_guard<std::mutex> l(mu_);
  return {calls_.begin(), calls_.end()};
}

std::vector<RecordedCall> ChatHistory::take() {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<RecordedCall> out(std::make_move_iterator(calls_.begin()), std::make_move_iterator(calls_.end()));
  calls_.clear();
  return out;
}

size_t ChatHistory::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return calls_.size();
}

std::optional<ChatHistory::Splice> ChatHistory::splice(const ChatFormatter& chat, const jinja::Value& messages,
                                                       const ChatOptions& opt, std::string* why) const {
  auto fail = [&](std::string w) -> std::optional<Splice> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  if (!opt.add_generation_prompt) return fail("add_generation_prompt is off");
  if (!messages.is_array()) return fail("messages is not a list");
  std::vector<const RecordedCall*> chat_calls;
  std::vector<RecordedCall> snapshot = calls();
  for (const auto& c : snapshot)
    if (!c.render_key.empty()) chat_calls.push_back(&c);
  if (chat_calls.empty()) return fail("no earlier chat call in this history");
  const jinja::Array& msgs = messages.array();
  bool any_assistant = false;
  for (size_t k = msgs.size(); k-- > 0;) {
    const jinja::Value& m = msgs[k];
    const jinja::Value* role = m.is_object() ? m.find("role") : nullptr;
    if (!role || !role->is_string() || role->as_string() != "assistant") continue;
    any_assistant = true;
    const std::string key = assistant_key(m);
    std::optional<std::string> prefix;  // rendering of messages[0..k) with the generation prompt
    for (size_t i = chat_calls.size(); i-- > 0;) {
      const RecordedCall& c = *chat_calls[i];
      if (c.answer_key != key) continue;
      if (!prefix)
        prefix = chat.render(jinja::Value(jinja::Array(msgs.begin(), msgs.begin() + static_cast<long>(k))), opt);
      if (*prefix != c.render_key) continue;
      // The text the template puts after this assistant turn: render with a placeholder content.
      jinja::Array with(msgs.begin(), msgs.end());
      with[k] = jinja::Value(
          jinja::Object{{"role", jinja::Value("assistant")}, {"content", jinja::Value(kSplicePlaceholder)}});
      const std::string full = chat.render(jinja::Value(std::move(with)), opt);
      const size_t at = full.find(kSplicePlaceholder);
      if (at == std::string::npos || full.find(kSplicePlaceholder, at + 1) != std::string::npos)
        return fail("the chat template does not render assistant content verbatim");
      std::string after = full.substr(at + kSplicePlaceholder.size());
      const Tokenizer& t = chat.tokenizer();
      if (!c.ids.empty() && t.is_special(c.ids.back())) {
        // The end-of-turn token the model sampled is the one the template writes after the content.
        const std::string end = t.decode(std::span<const int32_t>(&c.ids.back(), 1));
        if (after.rfind(end, 0) == 0) after.erase(0, end.size());
      }
      Splice s;
      s.via = c.id;
      s.ids = c.prompt_ids;
      s.ids.insert(s.ids.end(), c.ids.begin(), c.ids.end());
      const std::vector<int32_t> tail = t.encode(after);
      s.ids.insert(s.ids.end(), tail.begin(), tail.end());
      return s;
    }
  }
  return fail(any_assistant ? "no assistant message equals a recorded answer after the same conversation"
                            : "the conversation has no assistant message");
}

}  // namespace trinity::tok
