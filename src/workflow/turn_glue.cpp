// Template glue between the turns of a concatenated multi-turn sequence (see turn_glue.h).
#include "workflow/turn_glue.h"

#include <cctype>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;

const char* kSentinel = "TRINITYTURNSENTINEL7f3a9";

bool blank(std::string_view s) {
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace

std::vector<int32_t> turn_glue_ids(ModelClient& model, const std::string& history_json, const std::string& next_json,
                                   const Sample& last, const TurnTemplate& tt, const std::string& who) {
  json m = json::parse(history_json);
  m.push_back({{"role", "assistant"}, {"content", kSentinel}});
  for (auto& x : json::parse(next_json)) m.push_back(std::move(x));
  const std::string r = model.render_chat_template(m.dump(), true, tt.tools_json, tt.enable_thinking);
  const size_t at = r.rfind(kSentinel);
  if (at == std::string::npos)
    throw UnsupportedError("workflow", strcat(who,
                                              ": the chat template drops assistant content; cannot build a "
                                              "concatenated multi-turn sequence"));
  size_t cut = at + std::string(kSentinel).size();
  // The end-of-turn token the template writes after assistant content: the first EOS string after it.
  const auto& tok = model.tokenizer();
  size_t eot_pos = std::string::npos, eot_len = 0;
  int32_t eot_id = -1;
  for (int32_t id : model.eos_ids()) {
    const std::string t = tok.id_to_token(id);
    if (t.empty()) continue;
    const size_t p = r.find(t, cut);
    if (p != std::string::npos && p < eot_pos) eot_pos = p, eot_len = t.size(), eot_id = id;
  }
  // When the sample ended with that token (the usual stop), the glue starts after it; otherwise
  // (a different EOS, a stop string) the template's own end-of-turn text is part of the glue.
  if (eot_pos != std::string::npos && !last.ids.empty() && last.ids.back() == eot_id &&
      blank(std::string_view(r).substr(cut, eot_pos - cut)))
    cut = eot_pos + eot_len;
  return tok.encode(std::string_view(r).substr(cut));
}

void append_sampled(buffer::Experience& e, const Sample& s) {
  TRINITY_ASSERT(s.logprobs.size() == s.ids.size(), "sample logprobs/ids size mismatch");
  e.tokens.insert(e.tokens.end(), s.ids.begin(), s.ids.end());
  e.logprobs.insert(e.logprobs.end(), s.logprobs.begin(), s.logprobs.end());
  e.action_mask.insert(e.action_mask.end(), s.ids.size(), 1);
}

void append_glue(buffer::Experience& e, const std::vector<int32_t>& ids) {
  e.tokens.insert(e.tokens.end(), ids.begin(), ids.end());
  e.logprobs.insert(e.logprobs.end(), ids.size(), 0.0f);
  e.action_mask.insert(e.action_mask.end(), ids.size(), 0);
}

void decode_texts(buffer::Experience& e, const ModelClient& model) {
  const auto& tok = model.tokenizer();
  const auto P = static_cast<size_t>(e.prompt_length);
  e.prompt_text = tok.decode(std::span<const int32_t>(e.tokens.data(), P));
  e.response_text = tok.decode(std::span<const int32_t>(e.tokens.data() + P, e.tokens.size() - P));
}

}  // namespace trinity::workflow
