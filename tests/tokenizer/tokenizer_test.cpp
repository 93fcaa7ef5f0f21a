// Unit tests for the tokenizer on small synthetic tokenizer.json files: BPE merge order, both
// merge formats, added tokens (never split, lstrip/rstrip), TemplateProcessing, streaming decode
// at UTF-8 boundaries, and bad input (malformed JSON, unknown component types, invalid UTF-8,
// unknown ids, bad tokenizer_config) as clear typed errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace trinity::tok {
namespace {

using json = nlohmann::json;

// A byte-level BPE over all 256 bytes plus merges for "he", "ll", "hell", "hello", " w".
json tiny(bool pair_merges = false) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[uni::bytes_to_byte_level(std::string(1, static_cast<char>(b)))] = b;
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"Ġ", "w"}};
  json mj = json::array();
  int id = 256;
  for (const auto& [a, b] : merges) {
    vocab[a + b] = id++;
    if (pair_merges) mj.push_back(json::array({a, b}));
    else mj.push_back(a + " " + b);
  }
  json t;
  t["version"] = "1.0";
  t["added_tokens"] = json::array({
      {{"id", 300}, {"content", "<|end|>"}, {"special", true}, {"normalized", false}, {"lstrip", false}, {"rstrip", false}},
      {{"id", 301}, {"content", "<sep>"}, {"special", false}, {"normalized", false}, {"lstrip", true}, {"rstrip", true}},
  });
  t["normalizer"] = nullptr;
  t["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  t["post_processor"] = nullptr;
  t["decoder"] = {{"type", "ByteLevel"}};
  t["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", mj}};
  return t;
}

Tokenizer load(const json& j) { return Tokenizer::from_json(j.dump(), "tiny.json"); }

template <typename E>
std::string error_of(const std::string& text) {
  try {
    Tokenizer::from_json(text, "bad.json");
  } catch (const E& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(Tokenizer, BpeMergesInRankOrderBothFormats) {
  for (bool pairs : {false, true}) {
    const Tokenizer t = load(tiny(pairs));
    EXPECT_EQ(t.encode("hello"), (std::vector<int32_t>{259}));
    EXPECT_EQ(t.encode("hello world"), (std::vector<int32_t>{259, 260, 'o', 'r', 'l', 'd'}));
    EXPECT_EQ(t.encode("helo"), (std::vector<int32_t>{256, 'l', 'o'}));
    EXPECT_EQ(t.decode(t.encode("hello world")), "hello world");
  }
}

TEST(Tokenizer, AddedTokensAreNeverSplitAndStrip) {
  const Tokenizer t = load(tiny());
  EXPECT_EQ(t.encode("a<|end|>b"), (std::vector<int32_t>{'a', 300, 'b'}));
  EXPECT_EQ(t.encode("a  <sep>  b"), (std::vector<int32_t>{'a', 301, 'b'}));  // lstrip + rstrip
  EXPECT_EQ(t.encode("<|end"), (std::vector<int32_t>{'<', '|', 'e', 'n', 'd'}));
  EXPECT_EQ(t.decode(std::vector<int32_t>{'a', 300}), "a<|end|>");
  EXPECT_EQ(t.decode(std::vector<int32_t>{'a', 300}, /*skip_special_tokens=*/true), "a");
  EXPECT_TRUE(t.is_special(300));
  EXPECT_FALSE(t.is_special(301));
  EXPECT_EQ(t.token_to_id("<|end|>"), 300);
  EXPECT_EQ(t.token_to_id("hello"), 259);
  EXPECT_EQ(t.id_to_token(260), "Ġw");
}

TEST(Tokenizer, TemplateProcessingAddsBos) {
  json j = tiny();
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", json::array({{{"SpecialToken", {{"id", "<|end|>"}, {"type_id", 0}}}},
                                                 {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                         {"special_tokens", {{"<|end|>", {{"id", "<|end|>"}, {"ids", {300}}, {"tokens", {"<|end|>"}}}}}}};
  const Tokenizer t = load(j);
  EXPECT_EQ(t.encode("hello", true), (std::vector<int32_t>{300, 259}));
  EXPECT_EQ(t.encode("hello", false), (std::vector<int32_t>{259}));
}

TEST(Tokenizer, StreamingDecodeWaitsForCompleteUtf8) {
  const Tokenizer t = load(tiny());
  const std::string emoji = "\xF0\x9F\x98\x80";  // U+1F600 as four single-byte tokens
  StreamDecoder sd(t);
  EXPECT_EQ(sd.push('a'), "a");
  EXPECT_EQ(sd.push(static_cast<unsigned char>(emoji[0])), "");
  EXPECT_EQ(sd.push(static_cast<unsigned char>(emoji[1])), "");
  EXPECT_EQ(sd.push(static_cast<unsigned char>(emoji[2])), "");
  EXPECT_EQ(sd.pending_bytes(), 3u);
  EXPECT_EQ(sd.push(static_cast<unsigned char>(emoji[3])), emoji);
  EXPECT_EQ(sd.push(0xF0), "");
  EXPECT_EQ(sd.push('b'), "\xEF\xBF\xBD" "b");  // broken sequence -> U+FFFD, then the ASCII
  EXPECT_EQ(sd.push(0xE2), "");
  EXPECT_EQ(sd.finish(), "\xEF\xBF\xBD");
  // decode() applies the same replacement rule.
  EXPECT_EQ(t.decode(std::vector<int32_t>{0xF0, 0x9F, 'x'}), "\xEF\xBF\xBD" "x");
}

TEST(Tokenizer, InvalidUtf8InputIsAValueError) {
  const Tokenizer t = load(tiny());
  for (const std::string& bad : {std::string("ok\xFF"), std::string("\xC3"), std::string("a\xED\xA0\x80"), std::string("\xC0\xAF")}) {
    try {
      t.encode(bad);
      ADD_FAILURE() << "no error for invalid UTF-8";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("not valid UTF-8"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(t.decode(std::vector<int32_t>{99999}), ValueError);
  EXPECT_THROW(t.decode(std::vector<int32_t>{-1}), ValueError);
}

TEST(Tokenizer, MalformedFilesAreConfigErrors) {
  EXPECT_NE(error_of<ConfigError>("{not json").find("invalid JSON"), std::string::npos);
  EXPECT_NE(error_of<ConfigError>("[1, 2]").find("expected a JSON object"), std::string::npos);
  EXPECT_NE(error_of<ConfigError>("{}").find("missing field \"model\""), std::string::npos);
  json j = tiny();
  j["model"]["vocab"] = json::array();
  EXPECT_NE(error_of<ConfigError>(j.dump()).find("model.vocab"), std::string::npos);
  j = tiny();
  j["model"]["merges"].push_back("onlyone");
  EXPECT_NE(error_of<ConfigError>(j.dump()).find("expected \"left right\""), std::string::npos);
  j = tiny();
  j["model"]["merges"].push_back("zz qq");
  EXPECT_NE(error_of<ConfigError>(j.dump()).find("not in the vocab"), std::string::npos);
  j = tiny();
  j["added_tokens"][0]["id"] = "x";
  EXPECT_NE(error_of<ConfigError>(j.dump()).find("added_tokens[0]"), std::string::npos);
  j = tiny();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  EXPECT_NE(error_of<ConfigError>(j.dump()).find("does not compile"), std::string::npos);
}

TEST(Tokenizer, UnknownComponentTypesAreNamed) {
  json j = tiny();
  j["normalizer"] = {{"type", "Lowercase"}};
  EXPECT_NE(error_of<UnsupportedError>(j.dump()).find("normalizer type \"Lowercase\""), std::string::npos);
  j = tiny();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  EXPECT_NE(error_of<UnsupportedError>(j.dump()).find("pre_tokenizer type \"Whitespace\""), std::string::npos);
  j = tiny();
  j["model"]["type"] = "WordPiece";
  EXPECT_NE(error_of<UnsupportedError>(j.dump()).find("model type \"WordPiece\""), std::string::npos);
  j = tiny();
  j["decoder"] = {{"type", "Metaspace"}};
  EXPECT_NE(error_of<UnsupportedError>(j.dump()).find("decoder type \"Metaspace\""), std::string::npos);
  j = tiny();
  j["post_processor"] = {{"type", "BertProcessing"}};
  EXPECT_NE(error_of<UnsupportedError>(j.dump()).find("post_processor type \"BertProcessing\""), std::string::npos);
  j = tiny();
  j["model"]["byte_fallback"] = true;
  EXPECT_NE(error_of<UnsupportedError>(j.dump()).find("byte_fallback"), std::string::npos);
}

TEST(Tokenizer, ConcurrentEncodeSharesTheCacheSafely) {
  const Tokenizer t = load(tiny());
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i) texts.push_back("hello world " + std::to_string(i * 7919) + " he" + std::string(static_cast<size_t>(i % 300), 'l') + "o");
  std::vector<std::vector<int32_t>> want;
  for (const auto& s : texts) want.push_back(t.encode(s));
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      const Tokenizer copy = t;  // copies share the loaded state and the cache
      for (int rep = 0; rep < 20; ++rep)
        for (size_t i = 0; i < texts.size(); ++i) bad[static_cast<size_t>(k)] += copy.encode(texts[i]) != want[i];
    });
  for (auto& th : threads) th.join();
  for (int b : bad) EXPECT_EQ(b, 0);
}

TEST(TokenizerConfig, TokensAndTemplates) {
  const TokenizerConfig c = TokenizerConfig::parse(
      R"({"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>", "pad_token": null,
          "chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}]})");
  EXPECT_EQ(c.bos_token, "<s>");
  EXPECT_EQ(c.eos_token, "</s>");
  EXPECT_FALSE(c.pad_token.has_value());
  EXPECT_EQ(c.chat_template(), "D");
  EXPECT_EQ(c.chat_template("tool_use"), "T");
  try {
    c.chat_template("rag");
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("available: default, tool_use"), std::string::npos) << e.what();
  }
  EXPECT_THROW(TokenizerConfig::parse(R"({"eos_token": 5})"), ConfigError);
  EXPECT_THROW(TokenizerConfig::parse(R"({"chat_template": [{"name": "x"}]})"), ConfigError);
  EXPECT_THROW(TokenizerConfig::parse("{oops"), ConfigError);
}

}  // namespace
}  // namespace trinity::tok
