// Golden test: chat templates vs @huggingface/jinja (+ @huggingface/tokenizers for ids) on the
// real Qwen3 / Llama 3 templates and the Qwen2.5 / Llama 3.1 templates in templates/: exact
// rendered text and ids for system prompts, multi-turn, tools, tool calls and responses,
// reasoning content, enable_thinking and add_generation_prompt; template errors must match.
#include <gtest/gtest.h>

#include <map>

#include "core/error.h"
#include "oracle_util.h"
#include "tokenizer/chat.h"

namespace trinity::tok {
namespace {

using testing::model_dir;

ChatFormatter make_formatter(const std::string& tokenizer, const nlohmann::ordered_json& template_file) {
  TokenizerConfig cfg = TokenizerConfig::load(model_dir(tokenizer));
  if (template_file.is_string())
    cfg.chat_templates = {{"default", file::read_all(std::string(TRINITY_SOURCE_DIR) + "/tests/tokenizer/templates/" +
                                                     template_file.get<std::string>())}};
  return ChatFormatter(Tokenizer::load(model_dir(tokenizer)), cfg);
}

TEST(GoldenChat, MatchesHuggingFaceJinja) {
  testing::require_node_modules();
  const std::string out = testing::run_oracle("chat_oracle.mjs", "chat");
  const auto rows = testing::read_jsonl(out + "/chat.jsonl");
  ASSERT_GE(rows.size(), 100u);
  std::map<std::string, std::unique_ptr<ChatFormatter>> formatters;
  std::map<std::string, std::string> fmt_sources;
  int checked = 0, errors = 0;
  for (const auto& r : rows) {
    const std::string key = r["template"].get<std::string>();
    if (!formatters.count(key)) {
      formatters[key] = std::make_unique<ChatFormatter>(make_formatter(r["tokenizer"], r["template_file"]));
      fmt_sources[key] = r["template_file"].is_string()
                             ? file::read_all(std::string(TRINITY_SOURCE_DIR) + "/tests/tokenizer/templates/" +
                                              r["template_file"].get<std::string>())
                             : TokenizerConfig::load(model_dir(r["tokenizer"])).chat_template();
    }
    const ChatFormatter& fmt = *formatters[key];
    ChatOptions opt;
    opt.add_generation_prompt = r["add_generation_prompt"].get<bool>();
    if (r.contains("enable_thinking")) opt.enable_thinking = r["enable_thinking"].get<bool>();
    if (!r["tools"].is_null()) opt.tools = jinja::Value::from_json(r["tools"].dump());
    if (r.contains("extra")) opt.extra = jinja::Value::from_json(r["extra"].dump());
    const jinja::Value messages = jinja::Value::from_json(r["messages"].dump());
    const std::string where = key + " / " + r["case"].get<std::string>() + " / agp=" +
                              (opt.add_generation_prompt ? "1" : "0") +
                              (opt.enable_thinking ? (*opt.enable_thinking ? " think=1" : " think=0") : "");
    if (r.contains("error")) {
      try {
        fmt.render(messages, opt);
        ADD_FAILURE() << where << ": expected the template to raise: " << r["error"];
      } catch (const ValueError& e) {
        // Messages of raise_exception() must match; other errors only need to be errors (the JS wording differs).
        const std::string js_error = r["error"].get<std::string>();
        if (fmt_sources[key].find(js_error) != std::string::npos) {
          EXPECT_NE(std::string(e.what()).find(js_error), std::string::npos) << where << ": " << e.what();
        }
      }
      ++errors;
      continue;
    }
    const ChatEncoding enc = fmt.encode(messages, opt, /*with_mask=*/false);
    EXPECT_EQ(enc.rendered, r["rendered"].get<std::string>()) << where;
    EXPECT_EQ(enc.ids, r["ids"].get<std::vector<int32_t>>()) << where;
    ++checked;
  }
  EXPECT_GE(checked, 100);
  EXPECT_GE(errors, 1);
}

}  // namespace
}  // namespace trinity::tok
