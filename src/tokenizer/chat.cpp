// tokenizer_config.json parsing and chat formatting (see chat.h). Template variables mirror
// transformers' apply_chat_template: messages, tools (none when absent), add_generation_prompt,
// bos/eos/pad/unk tokens, additional_special_tokens, plus enable_thinking and any extras.
#include "tokenizer/chat.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file.h"
#include "core/json_limits.h"
#include "tokenizer/unicode.h"

namespace trinity::tok {

using json = nlohmann::json;

namespace {

std::optional<std::string> token_field(const json& cfg, const char* key, const std::string& origin) {
  if (!cfg.contains(key) || cfg[key].is_null()) return std::nullopt;
  const json& v = cfg[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  throw ConfigError("tokenizer", strcat(origin, ": \"", key, "\": expected a string or {\"content\": string}"));
}

}  // namespace

TokenizerConfig TokenizerConfig::load(const std::string& path) {
  const std::string p = file::is_dir(path) ? file::join(path, "tokenizer_config.json") : path;
  if (!file::exists(p)) throw IoError("tokenizer", strcat(p, ": no such file"));
  return parse(file::read_all(p), p);
}

TokenizerConfig TokenizerConfig::parse(const std::string& text, const std::string& origin) {
  json cfg;
  check_json_depth(text, origin, kMaxJsonDepth, "tokenizer");
  try {
    cfg = json::parse(text);
  } catch (const json::exception& e) {
    throw ConfigError("tokenizer", strcat(origin, ": invalid JSON: ", e.what()));
  }
  if (!cfg.is_object()) throw ConfigError("tokenizer", strcat(origin, ": expected a JSON object"));
  TokenizerConfig c;
  c.bos_token = token_field(cfg, "bos_token", origin);
  c.eos_token = token_field(cfg, "eos_token", origin);
  c.pad_token = token_field(cfg, "pad_token", origin);
  c.unk_token = token_field(cfg, "unk_token", origin);
  if (cfg.contains("additional_special_tokens") && cfg["additional_special_tokens"].is_array())
    for (size_t i = 0; i < cfg["additional_special_tokens"].size(); ++i) {
      const json& t = cfg["additional_special_tokens"][i];
      if (t.is_string()) c.additional_special_tokens.push_back(t.get<std::string>());
      else if (t.is_object() && t.contains("content") && t["content"].is_string())
        c.additional_special_tokens.push_back(t["content"].get<std::string>());
      else
        throw ConfigError("tokenizer", strcat(origin, ": additional_special_tokens[", i, "]: expected a string or {\"content\": string}"));
    }
  if (cfg.contains("clean_up_tokenization_spaces") && cfg["clean_up_tokenization_spaces"].is_boolean())
    c.clean_up_tokenization_spaces = cfg["clean_up_tokenization_spaces"].get<bool>();
  if (cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean()) c.add_bos_token = cfg["add_bos_token"].get<bool>();
  if (cfg.contains("chat_template") && !cfg["chat_template"].is_null()) {
    const json& ct = cfg["chat_template"];
    if (ct.is_string()) {
      c.chat_templates.emplace_back("default", ct.get<std::string>());
    } else if (ct.is_array()) {
      for (size_t i = 0; i < ct.size(); ++i) {
        const json& e = ct[i];
        if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || !e.contains("template") ||
            !e["template"].is_string())
          throw ConfigError("tokenizer", strcat(origin, ": chat_template[", i, "]: expected {\"name\": string, \"template\": string}"));
        c.chat_templates.emplace_back(e["name"].get<std::string>(), e["template"].get<std::string>());
      }
    } else {
      throw ConfigError("tokenizer", strcat(origin, ": chat_template: expected a string or a list of {name, template}"));
    }
  }
  return c;
}

const std::string& TokenizerConfig::chat_template(const std::string& name) const {
  for (const auto& [n, src] : chat_templates)
    if (n == name) return src;
  std::string names;
  for (const auto& [n, src] : chat_templates) names += (names.empty() ? "" : ", ") + n;
  throw ConfigError("tokenizer", strcat("chat template \"", name, "\" not found in tokenizer_config.json (available: ",
                                        names.empty() ? "none" : names, ")"));
}

ChatFormatter::ChatFormatter(Tokenizer tok, const TokenizerConfig& cfg, const std::string& template_name)
    : tok_(std::move(tok)), cfg_(cfg), tmpl_(cfg.chat_template(template_name), "chat_template[" + template_name + "]") {}

ChatFormatter ChatFormatter::load(const std::string& dir, const std::string& template_name) {
  return ChatFormatter(Tokenizer::load(dir), TokenizerConfig::load(dir), template_name);
}

std::string ChatFormatter::render_impl(const jinja::Value& messages, const ChatOptions& opt,
                                       std::vector<jinja::GenerationSpan>* gen) const {
  if (!messages.is_array()) throw ValueError("chat", "messages: expected a list of {role, content} objects");
  jinja::Object ctx;
  ctx.emplace_back("messages", messages);
  ctx.emplace_back("tools", opt.tools.is_undefined() ? jinja::Value::none() : opt.tools);
  ctx.emplace_back("add_generation_prompt", jinja::Value(opt.add_generation_prompt));
  auto tok_or_none = [](const std::optional<std::string>& t) { return t ? jinja::Value(*t) : jinja::Value::none(); };
  ctx.emplace_back("bos_token", tok_or_none(cfg_.bos_token));
  ctx.emplace_back("eos_token", tok_or_none(cfg_.eos_token));
  ctx.emplace_back("pad_token", tok_or_none(cfg_.pad_token));
  ctx.emplace_back("unk_token", tok_or_none(cfg_.unk_token));
  jinja::Array extra_special;
  for (const auto& s : cfg_.additional_special_tokens) extra_special.emplace_back(s);
  ctx.emplace_back("additional_special_tokens", jinja::Value(std::move(extra_special)));
  if (opt.enable_thinking) ctx.emplace_back("enable_thinking", jinja::Value(*opt.enable_thinking));
  jinja::Value context(std::move(ctx));
  if (opt.extra.is_object())
    for (const auto& [k, v] : opt.extra.object()) context.set(k, v);
  return tmpl_.render(context, gen);
}

std::string ChatFormatter::render(const jinja::Value& messages, const ChatOptions& opt) const {
  return render_impl(messages, opt, nullptr);
}

ChatEncoding ChatFormatter::encode(const jinja::Value& messages, const ChatOptions& opt, bool with_mask) const {
  ChatEncoding enc;
  std::vector<jinja::GenerationSpan> gen;
  enc.rendered = render_impl(messages, opt, &gen);
  enc.ids = tok_.encode(enc.rendered);
  if (!with_mask) return enc;

  if (!gen.empty()) {
    for (const auto& g : gen) enc.assistant_spans.emplace_back(g.begin, g.end);
  } else {
    const auto& msgs = messages.array();
    // Special tokens by first byte, for the end-of-turn search.
    std::vector<std::string> specials;
    for (const auto& t : tok_.added_tokens())
      if (tok_.is_special(t.id)) specials.push_back(t.content);
    for (size_t i = 0; i < msgs.size(); ++i) {
      const jinja::Value* role = msgs[i].find("role");
      if (!role || !role->is_string() || role->as_string() != "assistant") continue;
      ChatOptions prefix_opt = opt;
      prefix_opt.add_generation_prompt = true;
      const jinja::Value head(jinja::Array(msgs.begin(), msgs.begin() + static_cast<long>(i)));
      std::string prefix;
      try {
        prefix = render_impl(head, prefix_opt, nullptr);
      } catch (const Error& e) {
        throw ValueError("chat", strcat("assistant mask: rendering messages[:", i,
                                        "] with add_generation_prompt failed (", e.what(), ")"));
      }
      if (enc.rendered.compare(0, prefix.size(), prefix) != 0)
        throw ValueError("chat", strcat("assistant mask: the template is not prefix-stable at message ", i,
                                        " (render(messages[:", i, "], add_generation_prompt=True) is not a prefix of the "
                                        "full rendering); add {% generation %} blocks to the template"));
      const size_t start = prefix.size();
      size_t end = enc.rendered.size();
      for (const auto& s : specials) {
        const size_t f = enc.rendered.find(s, start);
        if (f != std::string::npos) end = std::min(end, f + s.size());
      }
      enc.assistant_spans.emplace_back(start, end);
    }
  }
  // Token byte offsets; the tokenizer's NFC (if any) is applied per section, which equals NFC of
  // the prefix at these ASCII-tag boundaries.
  std::string concat;
  std::vector<size_t> starts;
  starts.reserve(enc.ids.size());
  for (int32_t id : enc.ids) {
    starts.push_back(concat.size());
    concat += tok_.token_bytes(id);
  }
  auto to_token_space = [&](size_t off) {
    if (concat == enc.rendered) return off;
    return uni::nfc(std::string_view(enc.rendered).substr(0, off)).size();
  };
  enc.assistant_mask.assign(enc.ids.size(), 0);
  for (const auto& [b, e] : enc.assistant_spans) {
    const size_t tb = to_token_space(b), te = to_token_space(e);
    for (size_t t = 0; t < starts.size(); ++t)
      if (starts[t] >= tb && starts[t] < te) enc.assistant_mask[t] = 1;
  }
  return enc;
}

}  // namespace trinity::tok
