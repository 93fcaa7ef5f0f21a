// Assistant-token masks on the real Qwen3 / Llama 3 tokenizers and templates (multi-turn, tool
// calls, <think> stripping of earlier turns, {% generation %} templates), and the
// `trinity tokenize` command end to end against the library.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/error.h"
#include "core/file.h"
#include "oracle_util.h"
#include "tokenizer/chat.h"

namespace trinity::tok {
namespace {

using testing::model_dir;

// Decodes each maximal run of masked tokens.
std::vector<std::string> masked_runs(const ChatFormatter& f, const ChatEncoding& e) {
  std::vector<std::string> runs;
  std::vector<int32_t> cur;
  for (size_t i = 0; i <= e.ids.size(); ++i) {
    if (i < e.ids.size() && e.assistant_mask[i]) {
      cur.push_back(e.ids[i]);
    } else if (!cur.empty()) {
      runs.push_back(f.tokenizer().decode(cur));
      cur.clear();
    }
  }
  return runs;
}

jinja::Value msgs(const std::string& j) { return jinja::Value::from_json(j); }

TEST(AssistantMask, Qwen3MultiTurnAndThinkStripping) {
  testing::require_node_modules();
  const ChatFormatter f = ChatFormatter::load(model_dir("qwen3"));
  ChatOptions opt;
  auto e = f.encode(msgs(R"([{"role":"system","content":"S"},{"role":"user","content":"Name a prime."},
      {"role":"assistant","content":"7 is prime."},{"role":"user","content":"Another?"},{"role":"assistant","content":"11."}])"), opt);
  ASSERT_EQ(e.assistant_mask.size(), e.ids.size());
  EXPECT_EQ(masked_runs(f, e), (std::vector<std::string>{"7 is prime.<|im_end|>", "<think>\n\n</think>\n\n11.<|im_end|>"}));

  e = f.encode(msgs(R"([{"role":"user","content":"3*4?"},{"role":"assistant","content":"<think>\nadd\n</think>\n\n12"},
      {"role":"user","content":"5*6?"},{"role":"assistant","content":"<think>\nsixes\n</think>\n\n30"}])"), opt);
  EXPECT_EQ(masked_runs(f, e), (std::vector<std::string>{"12<|im_end|>", "<think>\nsixes\n</think>\n\n30<|im_end|>"}));
}

TEST(AssistantMask, Qwen3ToolCalls) {
  testing::require_node_modules();
  const ChatFormatter f = ChatFormatter::load(model_dir("qwen3"));
  ChatOptions opt;
  opt.tools = jinja::Value::from_json(R"([{"type":"function","function":{"name":"f","parameters":{}}}])");
  const auto e = f.encode(msgs(R"([{"role":"user","content":"go"},
      {"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":{"x":1}}}]},
      {"role":"tool","content":"42"},{"role":"assistant","content":"It is 42."}])"), opt);
  EXPECT_EQ(masked_runs(f, e),
            (std::vector<std::string>{"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call><|im_end|>",
                                      "<think>\n\n</think>\n\nIt is 42.<|im_end|>"}));
}

TEST(AssistantMask, Llama3) {
  testing::require_node_modules();
  const ChatFormatter f = ChatFormatter::load(model_dir("llama3"));
  const auto e = f.encode(msgs(R"([{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello there."},
      {"role":"user","content":"Bye"},{"role":"assistant","content":" See you. "}])"), ChatOptions{});
  EXPECT_EQ(masked_runs(f, e), (std::vector<std::string>{"Hello there.<|eot_id|>", "See you.<|eot_id|>"}));
  EXPECT_EQ(e.assistant_mask.front(), 0);
}

TEST(AssistantMask, GenerationBlocksWin) {
  testing::require_node_modules();
  TokenizerConfig cfg = TokenizerConfig::load(model_dir("qwen3"));
  cfg.chat_templates = {{"default",
                         "{% for m in messages %}{% if m.role == 'assistant' %}<|im_start|>assistant\n"
                         "{% generation %}{{ m.content }}<|im_end|>{% endgeneration %}\n"
                         "{% else %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endif %}{% endfor %}"}};
  const ChatFormatter f(Tokenizer::load(model_dir("qwen3")), cfg);
  const auto e = f.encode(msgs(R"([{"role":"user","content":"a"},{"role":"assistant","content":"b c"}])"), ChatOptions{});
  EXPECT_EQ(masked_runs(f, e), (std::vector<std::string>{"b c<|im_end|>"}));
}

TEST(TokenizeCli, MatchesLibrary) {
  testing::require_node_modules();
  const std::string dir = std::string(TRINITY_BINARY_DIR) + "/tokenizer_golden/cli";
  file::make_dirs(dir);
  const std::string in = dir + "/in.jsonl", out = dir + "/out.jsonl";
  file::write_atomic(in,
                     "{\"text\": \"Hello <|im_end|> wörld 😀\"}\n"
                     "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"add_generation_prompt\": true, \"enable_thinking\": false}\n"
                     "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}, {\"role\": \"assistant\", \"content\": \"Yo\"}], "
                     "\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]}\n");
  const std::string cmd = std::string(TRINITY_BINARY_DIR) + "/trinity tokenize --tokenizer '" + model_dir("qwen3") +
                          "' --input '" + in + "' --output '" + out + "' --mask 2> '" + dir + "/err.txt'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << file::read_all(dir + "/err.txt");
  const auto rows = testing::read_jsonl(out);
  ASSERT_EQ(rows.size(), 3u);
  const ChatFormatter f = ChatFormatter::load(model_dir("qwen3"));
  const auto ids = f.tokenizer().encode("Hello <|im_end|> wörld 😀");
  EXPECT_EQ(rows[0]["ids"].get<std::vector<int32_t>>(), ids);
  EXPECT_EQ(rows[0]["decoded"].get<std::string>(), "Hello <|im_end|> wörld 😀");
  ChatOptions opt;
  opt.add_generation_prompt = true;
  opt.enable_thinking = false;
  const auto e1 = f.encode(msgs(R"([{"role":"user","content":"Hi"}])"), opt);
  EXPECT_EQ(rows[1]["rendered"].get<std::string>(), e1.rendered);
  EXPECT_EQ(rows[1]["ids"].get<std::vector<int32_t>>(), e1.ids);
  EXPECT_NE(rows[2]["rendered"].get<std::string>().find("# Tools"), std::string::npos);
  EXPECT_EQ(rows[2]["assistant_mask"].size(), rows[2]["ids"].size());

  file::write_atomic(in, "{\"text\": \"fine\"}\n{\"messages\": \"not a list\"}\n");
  const std::string bad = std::string(TRINITY_BINARY_DIR) + "/trinity tokenize --tokenizer '" + model_dir("qwen3") +
                          "' --input '" + in + "' --output '" + out + "' 2> '" + dir + "/err.txt'";
  EXPECT_NE(std::system(bad.c_str()), 0);
  const std::string err = file::read_all(dir + "/err.txt");
  EXPECT_NE(err.find("in.jsonl:2"), std::string::npos) << err;
  EXPECT_NE(err.find("\"messages\" must be a list"), std::string::npos) << err;
}

}  // namespace
}  // namespace trinity::tok
