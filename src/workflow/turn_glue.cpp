// turn_glue_ids (see turn_glue.h).
#include "workflow/turn_glue.h"

#include <cctype>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace trinity::workflow {
namespace {

const char* kSentinel = "TRINITYTURNSENTINEL7f3a9";

bool blank(std::string_view s) {
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace

std::vector<int32_t> turn_glue_ids(ModelClient& model, const std::string& messages_before, const std::string& assistant,
                                   const std::string& next_messages, const Sample& s, const std::string& tools) {
  using json = nlohmann::json;
  json m = json::parse(messages_before);
  json a = json::parse(assistant);
  a["content"] = kSentinel;
  m.push_back(a);
  for (const auto& n : json::parse(next_messages)) m.push_back(n);
  const std::string r = model.render_chat_template(m.dump(), true, tools);
  const size_t at = r.rfind(kSentinel);
  if (at == std::string::npos)
    throw UnsupportedError("workflow", "the chat template drops assistant content; cannot build a concatenated "
                                       "multi-turn sequence");
  size_t cut = at + std::string(kSentinel).size();
  // The end-of-turn token the template writes after the assistant turn: the first EOS string after it.
  const auto& tok = model.tokenizer();
  size_t eot_pos = std::string::npos, eot_len = 0;
  int32_t eot_id = -1;
  for (int32_t id : model.eos_ids()) {
    const std::string t = tok.id_to_token(id);
    if (t.empty()) continue;
    const size_t p = r.find(t, cut);
    if (p != std::string::npos && p < eot_pos) eot_pos = p, eot_len = t.size(), eot_id = id;
  }
  if (eot_pos != std::string::npos) {
    const bool ended_with_eot = !s.ids.empty() && s.ids.back() == eot_id;
    if (ended_with_eot) cut = eot_pos + eot_len;
    // The template's rendering of sampled tool calls lies between: the model already wrote them.
    else if (!blank(std::string_view(r).substr(cut, eot_pos - cut))) cut = eot_pos;
  }
  return tok.encode(std::string_view(r).substr(cut));
}

}  // namespace trinity::workflow
