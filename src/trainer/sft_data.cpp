// SFT / DPO rows -> experiences (see sft_data.h for the token layout of each format).
#include "trainer/sft_data.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_limits.h"

namespace trinity::trainer {

namespace {

using json = nlohmann::json;

struct RowError {
  std::string why;
};

std::string text_of(const json& row, const std::string& key) {
  const auto& v = row.at(key);
  return v.is_string() ? v.get<std::string>() : v.dump();
}

json conversation(const json& v, const std::string& key) {
  if (v.is_string() && json_depth(v.get_ref<const std::string&>()) > kMaxJsonDepth)
    throw RowError{strcat("'", key, "' is JSON nested deeper than ", kMaxJsonDepth, " levels")};
  json j = v.is_string() ? json::parse(v.get<std::string>(), nullptr, false) : v;
  if (!j.is_array()) throw RowError{strcat("'", key, "' is not a list of messages")};
  return j;
}

tok::ChatOptions chat_options(const json& row, const buffer::FormatConfig& f, bool gen_prompt) {
  tok::ChatOptions o;
  o.add_generation_prompt = gen_prompt;
  o.enable_thinking = f.enable_thinking;
  if (!f.tools_key.empty() && row.contains(f.tools_key) && !row[f.tools_key].is_null()) {
    const auto& t = row[f.tools_key];
    o.tools = tok::jinja::Value::from_json(t.is_string() ? t.get<std::string>() : t.dump());
  }
  return o;
}

json with_system(json msgs, const buffer::FormatConfig& f, const json& row) {
  std::string sys = f.system_prompt;
  if (!f.system_prompt_key.empty() && row.contains(f.system_prompt_key) && row[f.system_prompt_key].is_string())
    sys = row[f.system_prompt_key].get<std::string>();
  const bool has_sys = !msgs.empty() && msgs[0].is_object() && msgs[0].value("role", "") == "system";
  if (!sys.empty() && !has_sys) msgs.insert(msgs.begin(), json{{"role", "system"}, {"content", sys}});
  return msgs;
}

// Cuts the response to max_model_len; RowError when the prompt alone does not fit.
void fit(buffer::Experience& e, int64_t max_len, SftDataReport& rep) {
  if (max_len <= 0 || static_cast<int64_t>(e.tokens.size()) <= max_len) return;
  if (e.prompt_length >= max_len) throw RowError{strcat("prompt of ", e.prompt_length, " tokens leaves no room under max_model_len ", max_len)};
  e.tokens.resize(static_cast<size_t>(max_len));
  e.action_mask.resize(static_cast<size_t>(max_len - e.prompt_length));
  e.truncate_status = buffer::TruncateStatus::kResponseTruncated;
  ++rep.truncated;
}

template <class F>
std::vector<buffer::Experience> convert(const std::vector<buffer::RawRow>& rows, const SftDataOptions& opt,
                                        SftDataReport& rep, const char* kind, F&& one) {
  std::vector<buffer::Experience> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    ++rep.rows;
    try {
      const json row = json::parse(rows[i].json);
      buffer::Experience e = one(row);
      e.eid.batch = kind;
      e.eid.task = static_cast<int64_t>(i);
      e.reward = 0.0;
      e.info = json{{"source", rows[i].where}}.dump();
      out.push_back(std::move(e));
      ++rep.kept;
    } catch (const RowError& err) {
      if (opt.strict) throw ValueError("trainer", strcat(rows[i].where, ": ", err.why));
      ++rep.skipped;
      if (rep.problems.size() < 100) rep.problems.push_back(strcat(rows[i].where, ": ", err.why));
    } catch (const json::exception& err) {
      throw ValueError("trainer", strcat(rows[i].where, ": ", err.what()));
    }
  }
  return out;
}

// Tokens of `prompt` (rendered with the generation prompt) and of `prompt + response` (full).
struct ChatPair {
  std::vector<int32_t> prompt, full;
  std::vector<uint8_t> mask;  // assistant mask of `full`
};

ChatPair chat_pair(const tok::ChatFormatter& chat, const json& prompt, const json& response, const json& row,
                   const buffer::FormatConfig& f) {
  ChatPair p;
  json all = prompt;
  for (const auto& m : response) all.push_back(m);
  const auto pe = chat.encode(tok::jinja::Value::from_json(prompt.dump()), chat_options(row, f, true), false);
  const auto fe = chat.encode(tok::jinja::Value::from_json(all.dump()), chat_options(row, f, false), true);
  if (fe.ids.size() < pe.ids.size() || !std::equal(pe.ids.begin(), pe.ids.end(), fe.ids.begin()))
    throw RowError{"the chat template's rendering of the prompt is not a prefix of the whole conversation"};
  p.prompt = pe.ids, p.full = fe.ids, p.mask = fe.assistant_mask;
  return p;
}

// Whether rows are plaintext (else messages); ConfigError for an unknown prompt_type or a missing
// chat template / EOS id that the format needs. `what` is "SFT" or "DPO".
bool plaintext_format(const SftDataOptions& opt, const tok::ChatFormatter* chat, const char* what) {
  const auto& f = opt.format;
  const bool plain = f.prompt_type == "plaintext";
  if (!plain && f.prompt_type != "messages")
    throw ConfigError("trainer", strcat("format.prompt_type '", f.prompt_type, "' is unknown; expected messages or plaintext"));
  if (!plain && !chat)
    throw ConfigError("trainer", strcat(what, " data with prompt_type messages needs a chat template (tokenizer_config.json)"));
  if (plain && !chat && !opt.eos_id)
    throw ConfigError("trainer", strcat("plaintext ", what, " without a chat template needs the EOS token id"));
  return plain;
}

}  // namespace

std::vector<buffer::Experience> sft_experiences(const std::vector<buffer::RawRow>& rows, const SftDataOptions& opt,
                                                const tok::Tokenizer& tok, const tok::ChatFormatter* chat,
                                                SftDataReport& report) {
  const auto& f = opt.format;
  const bool plain = plaintext_format(opt, chat, "SFT");
  return convert(rows, opt, report, "sft", [&](const json& row) {
    buffer::Experience e;
    json msgs;
    if (plain) {
      const std::string prompt = text_of(row, f.prompt_key), response = text_of(row, f.response_key);
      if (!chat) {
        e.tokens = tok.encode(prompt);
        e.prompt_length = static_cast<int64_t>(e.tokens.size());
        const auto r = tok.encode(response);
        e.tokens.insert(e.tokens.end(), r.begin(), r.end());
        e.tokens.push_back(*opt.eos_id);
        e.action_mask.assign(r.size() + 1, 1);
        e.prompt_text = prompt, e.response_text = response;
        fit(e, opt.max_model_len, report);
        if (e.prompt_length < 1) throw RowError{"empty prompt (the first response token needs a prompt token)"};
        return e;
      }
      msgs = json::array({json{{"role", "user"}, {"content", prompt}}, json{{"role", "assistant"}, {"content", response}}});
    } else {
      msgs = conversation(row.at(f.messages_key), f.messages_key);
    }
    msgs = with_system(std::move(msgs), f, row);
    const auto enc = chat->encode(tok::jinja::Value::from_json(msgs.dump()), chat_options(row, f, false), true);
    const auto first = std::find(enc.assistant_mask.begin(), enc.assistant_mask.end(), 1);
    if (first == enc.assistant_mask.end()) throw RowError{"no assistant tokens to train on"};
    e.prompt_length = first - enc.assistant_mask.begin();
    if (e.prompt_length < 1) throw RowError{"the conversation starts with an assistant token (no prompt)"};
    e.tokens = enc.ids;
    e.action_mask.assign(first, enc.assistant_mask.end());
    e.messages = msgs.dump();
    fit(e, opt.max_model_len, report);
    return e;
  });
}

std::vector<buffer::Experience> dpo_experiences(const std::vector<buffer::RawRow>& rows, const SftDataOptions& opt,
                                                const tok::Tokenizer& tok, const tok::ChatFormatter* chat,
                                                SftDataReport& report) {
  const auto& f = opt.format;
  const bool plain = plaintext_format(opt, chat, "DPO");
  return convert(rows, opt, report, "dpo", [&](const json& row) {
    buffer::Experience e;
    std::vector<int32_t> ch, rj;
    if (plain && !chat) {
      e.tokens = tok.encode(text_of(row, f.prompt_key));
      ch = tok.encode(text_of(row, f.chosen_key)), rj = tok.encode(text_of(row, f.rejected_key));
      ch.push_back(*opt.eos_id), rj.push_back(*opt.eos_id);
    } else {
      json prompt, c, r;
      auto as_turns = [&](const std::string& key) {
        const auto& v = row.at(key);
        if (v.is_string() && !plain) {
          if (json_depth(v.get_ref<const std::string&>()) > kMaxJsonDepth)
            throw RowError{strcat("'", key, "' is JSON nested deeper than ", kMaxJsonDepth, " levels")};
          const json p = json::parse(v.get<std::string>(), nullptr, false);
          if (p.is_array()) return p;
        }
        if (v.is_string()) return json::array({json{{"role", "assistant"}, {"content", v.get<std::string>()}}});
        return conversation(v, key);
      };
      if (plain) {
        prompt = json::array({json{{"role", "user"}, {"content", text_of(row, f.prompt_key)}}});
        c = as_turns(f.chosen_key), r = as_turns(f.rejected_key);
      } else if (row.contains(f.messages_key) && !row[f.messages_key].is_null()) {
        prompt = conversation(row[f.messages_key], f.messages_key);
        c = as_turns(f.chosen_key), r = as_turns(f.rejected_key);
      } else {
        // Whole conversations: the shared prompt is everything before the last turn.
        json fc = as_turns(f.chosen_key), fr = as_turns(f.rejected_key);
        if (fc.size() < 2 || fr.size() < 2) throw RowError{"chosen/rejected conversations need a prompt and a reply"};
        prompt = json(std::vector<json>(fc.begin(), fc.end() - 1));
        if (prompt != json(std::vector<json>(fr.begin(), fr.end() - 1)))
          throw RowError{"chosen and rejected conversations differ before their last turn"};
        c = json::array({fc.back()}), r = json::array({fr.back()});
      }
      prompt = with_system(std::move(prompt), f, row);
      const ChatPair pc = chat_pair(*chat, prompt, c, row, f), pr = chat_pair(*chat, prompt, r, row, f);
      e.tokens = pc.prompt;
      ch.assign(pc.full.begin() + static_cast<int64_t>(pc.prompt.size()), pc.full.end());
      rj.assign(pr.full.begin() + static_cast<int64_t>(pr.prompt.size()), pr.full.end());
      e.chosen_messages = c.dump(), e.rejected_messages = r.dump();
      e.messages = prompt.dump();
    }
    e.prompt_length = static_cast<int64_t>(e.tokens.size());
    if (e.prompt_length < 1) throw RowError{"empty prompt"};
    if (ch.empty() || rj.empty()) throw RowError{"empty chosen or rejected response"};
    if (opt.max_model_len > 0) {
      const int64_t room = opt.max_model_len - e.prompt_length;
      if (room < 1) throw RowError{strcat("prompt of ", e.prompt_length, " tokens leaves no room under max_model_len ", opt.max_model_len)};
      if (static_cast<int64_t>(std::max(ch.size(), rj.size())) > room) {
        ch.resize(std::min(ch.size(), static_cast<size_t>(room)));
        rj.resize(std::min(rj.size(), static_cast<size_t>(room)));
        e.truncate_status = buffer::TruncateStatus::kResponseTruncated;
        ++report.truncated;
      }
    }
    e.chosen = std::move(ch), e.rejected = std::move(rj);
    return e;
  });
}

}  // namespace trinity::trainer
