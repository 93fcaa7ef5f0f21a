// Native data operators (data_ops.h) against hand-computed keep vectors: every operator, empty input,
// empty text and invalid UTF-8, Data-Juicer's repetition formulas on tiny examples, the LSH parameter
// choice against datasketch's optimal_param (values from a Python re-implementation), MinHash
// near-duplicate removal on planted pairs, and argument / name errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "pipeline/data_ops.h"
#include "pipeline/minhash.h"
#include "pipeline/unicode_text.h"

namespace trinity::pipeline {
namespace {

std::vector<DataRow> rows_of(const std::vector<std::string>& texts) {
  std::vector<DataRow> rows;
  for (const auto& t : texts) rows.push_back({t, -1});
  return rows;
}

// The keep vector of op(args) on texts, as ints for readable failures.
std::vector<int> keep_of(const std::string& op, const std::string& args, const std::vector<std::string>& texts) {
  const DataOpResult r = make_data_op(op, args)->apply(rows_of(texts));
  EXPECT_EQ(r.keep.size(), texts.size());
  std::vector<int> k(r.keep.begin(), r.keep.end());
  EXPECT_EQ(r.metrics.at("filtered_count"), static_cast<double>(std::count(k.begin(), k.end(), 0)));
  return k;
}

using V = std::vector<int>;

// The message of the ConfigError that make_data_op(op, args) throws ("" when none).
std::string config_error(const std::string& op, const std::string& args) {
  try {
    make_data_op(op, args);
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.component(), "pipeline");
    return e.what();
  }
  return "";
}

TEST(Utf8, DecodesStrictlyAndCountsInvalidBytesOnce) {
  EXPECT_EQ(count_code_points(""), 0u);
  EXPECT_EQ(count_code_points("héllo"), 5u);  // é is 2 bytes
  EXPECT_EQ(count_code_points("世界"), 2u);
  EXPECT_EQ(count_code_points("😀"), 1u);                 // U+1F600
  EXPECT_EQ(count_code_points("\300\200"), 2u);          // overlong NUL: 2 invalid bytes
  EXPECT_EQ(count_code_points("\355\240\200"), 3u);      // surrogate U+D800
  EXPECT_EQ(count_code_points("\364\220\200\200"), 4u);  // above U+10FFFF
  EXPECT_EQ(count_code_points("a\342\202"), 3u);         // truncated euro sign
  EXPECT_EQ(count_code_points("\377\376"), 2u);
  size_t i = 0;
  EXPECT_EQ(next_code_point("😀", i), 0x1F600u);
  EXPECT_EQ(i, 4u);
  i = 0;
  EXPECT_EQ(next_code_point("\377", i), kInvalidByte + 0xFF);
  std::string s;
  for (uint32_t cp : {0x41u, 0xE9u, 0x4E16u, 0x1F600u, kInvalidByte + 0xFE}) append_utf8(s, cp);
  EXPECT_EQ(s, "Aé世😀\376");
}

TEST(Utf8, ClassifiesAndLowercases) {
  EXPECT_EQ(classify('a').script, Script::kLatin);
  EXPECT_EQ(classify('7').kind, CharKind::kDigit);
  EXPECT_EQ(classify('\n').kind, CharKind::kSpace);
  EXPECT_EQ(classify('!').kind, CharKind::kOther);
  EXPECT_EQ(classify(0xE9).script, Script::kLatin);      // é
  EXPECT_EQ(classify(0xD7).kind, CharKind::kOther);      // ×
  EXPECT_EQ(classify(0x3B1).script, Script::kGreek);     // α
  EXPECT_EQ(classify(0x416).script, Script::kCyrillic);  // Ж
  EXPECT_EQ(classify(0x5D0).script, Script::kHebrew);    // א
  EXPECT_EQ(classify(0x628).script, Script::kArabic);    // ب
  EXPECT_EQ(classify(0x663).kind, CharKind::kDigit);     // Arabic-Indic 3
  EXPECT_EQ(classify(0x915).script, Script::kDevanagari);
  EXPECT_EQ(classify(0x93F).script, Script::kDevanagari);  // vowel sign i is part of the word
  EXPECT_EQ(classify(0x964).kind, CharKind::kOther);       // danda
  EXPECT_EQ(classify(0x0E01).script, Script::kThai);
  EXPECT_EQ(classify(0x4E16).script, Script::kCjk);   // 世
  EXPECT_EQ(classify(0x3042).script, Script::kCjk);   // あ
  EXPECT_EQ(classify(0x30A2).script, Script::kCjk);   // ア
  EXPECT_EQ(classify(0xD55C).script, Script::kCjk);   // 한
  EXPECT_EQ(classify(0x20000).script, Script::kCjk);  // Ext B
  EXPECT_EQ(classify(0x995).script, Script::kOther);  // Bengali ka: a letter of another script
  EXPECT_EQ(classify(0x9E7).kind, CharKind::kDigit);  // Bengali 1
  EXPECT_EQ(classify(0x3000).kind, CharKind::kSpace);
  EXPECT_EQ(classify(0x3002).kind, CharKind::kOther);  // 。
  EXPECT_EQ(classify(0x1F600).kind, CharKind::kOther);
  EXPECT_EQ(classify(kInvalidByte + 0xC3).kind, CharKind::kOther);
  EXPECT_EQ(fold_case("ÀÉ ĀĹŸ ΑΣ ПЖ Ё AbC \377"), "àé āĺÿ ασ пж ё abc \377");
  // \343\200\200 is U+3000 IDEOGRAPHIC SPACE.
  EXPECT_EQ(split_words(" a\tbb\343\200\200c  "), (std::vector<std::string_view>{"a", "bb", "c"}));
  EXPECT_TRUE(split_words(" \n ").empty());
}

TEST(DataOps, RegistryNamesAndUnknownName) {
  const std::vector<std::string> names = data_op_names();
  EXPECT_EQ(names.size(), 10u);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_TRUE(is_data_op("document_minhash_deduplicator"));
  EXPECT_FALSE(is_data_op("reward_filter"));
  const std::string m = config_error("text_lenght_filter", "{}");
  EXPECT_NE(m.find("unknown data operator 'text_lenght_filter'"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'text_length_filter'"), std::string::npos) << m;
  EXPECT_NE(m.find("json_format_filter"), std::string::npos) << m;  // the list of names
}

TEST(DataOps, EveryOperatorHandlesNoRowsAndEmptyText) {
  for (const auto& name : data_op_names()) {
    const std::string args = name == "text_pattern_filter" ? R"({"pattern": "x"})" : "";
    auto op = make_data_op(name, args);
    const DataOpResult none = op->apply({});
    EXPECT_TRUE(none.keep.empty()) << name;
    EXPECT_EQ(none.metrics.at("filtered_count"), 0) << name;
    const std::vector<DataRow> empty = {{"", 0}, {"", 0}};
    EXPECT_EQ(op->apply(empty).keep.size(), 2u) << name;
  }
}

TEST(DataOps, TextLengthFilterCountsCodePoints) {
  const std::vector<std::string> t = {"ab",
                                      "abc",
                                      "héllo",         // 5 code points, 6 bytes
                                      "世界你好吗啊",  // 6
                                      "",
                                      "\377\376A",  // 2 invalid bytes + A = 3
                                      "\342\202",   // truncated: 2
                                      "a€b"};       // a € b = 3
  EXPECT_EQ(keep_of("text_length_filter", R"({"min_len": 3, "max_len": 5})", t), (V{0, 1, 1, 0, 0, 1, 0, 1}));
  EXPECT_EQ(keep_of("text_length_filter", "{}", {"0123456789", "012345678", std::string(100000, 'x')}), (V{1, 0, 1}));
  EXPECT_EQ(keep_of("text_length_filter", R"({"min_len": 0, "max_len": null})", {""}), (V{1}));
}

TEST(DataOps, TokenNumFilterNeedsTokenCounts) {
  auto op = make_data_op("token_num_filter", R"({"min_num": 2, "max_num": 4})");
  const std::vector<DataRow> rows = {{"a", 1}, {"b", 2}, {"c", 4}, {"d", 5}, {"", 0}};
  const DataOpResult r = op->apply(rows);
  EXPECT_EQ(V(r.keep.begin(), r.keep.end()), (V{0, 1, 1, 0, 0}));
  EXPECT_EQ(r.metrics.at("filtered_count"), 3);
  EXPECT_EQ(make_data_op("token_num_filter", "")->apply({{"x", 9}, {"y", 10}}).keep, (std::vector<char>{0, 1}));
  try {
    op->apply({{"a", 3}, {"b", -1}});
    FAIL() << "no error for an unknown token count";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("token count of row 1 is unknown"), std::string::npos) << e.what();
  }
}

TEST(DataOps, CharacterRepetitionFollowsDataJuicer) {
  // rep_len 2. Counts (sorted), #distinct D, k = min(floor(sqrt D), #(count > 1)), ratio = top k / all:
  //   abcdefgh: 7 x 1, D 7, k 0 -> 0            aaaaab: aa 4, ab 1, D 2, k 1 -> 4/5
  //   abab: ab 2, ba 1, D 2, k 1 -> 2/3          abcabd: ab 2, bc ca bd 1, D 4, k 1 -> 2/5
  //   ab: one 2-gram, k 0 -> 0                   "": no 2-grams -> 0
  //   éééa: éé 2, éa 1 -> 2/3 (code points; bytes would differ)
  EXPECT_EQ(keep_of("character_repetition_filter", R"({"rep_len": 2, "min_ratio": 0.1, "max_ratio": 0.5})",
                    {"abcdefgh", "aaaaab", "abab", "abcabd", "ab", "", "éééa"}),
            (V{0, 0, 0, 1, 0, 0, 0}));
  // abcabcabc, rep_len 3: abc 3, bca 2, cab 2; D 3, k = min(1, 3) = 1 -> 3/7 = 0.4286.
  EXPECT_EQ(keep_of("character_repetition_filter", R"({"rep_len": 3, "max_ratio": 0.43})", {"abcabcabc"}), (V{1}));
  EXPECT_EQ(keep_of("character_repetition_filter", R"({"rep_len": 3, "max_ratio": 0.42})", {"abcabcabc"}), (V{0}));
  // rep_len 1: aaaabbbbcccc: 4, 4, 4; D 3, k 1 -> 4/12 = 0.333 (not 12/12: only the top sqrt(D) count).
  // aabbccddeeffgghhiijj: ten 2s; D 10, k 3 -> 6/20 = 0.3.
  EXPECT_EQ(keep_of("character_repetition_filter", R"({"rep_len": 1, "min_ratio": 0.32, "max_ratio": 0.34})",
                    {"aaaabbbbcccc", "aabbccddeeffgghhiijj"}),
            (V{1, 0}));
  EXPECT_EQ(keep_of("character_repetition_filter", R"({"rep_len": 1, "min_ratio": 0.29, "max_ratio": 0.31})",
                    {"aaaabbbbcccc", "aabbccddeeffgghhiijj"}),
            (V{0, 1}));
  // Invalid bytes are code points of their own: \xFF\xFF\xFF, rep_len 1 -> one count 3 -> 1.0.
  EXPECT_EQ(keep_of("character_repetition_filter", R"({"rep_len": 1, "max_ratio": 0.99})", {"\377\377\377", "xyz"}),
            (V{0, 1}));
  // Defaults (rep_len 10, [0, 0.5]): a short text has no 10-grams (ratio 0) and is kept.
  EXPECT_EQ(keep_of("character_repetition_filter", "", {"short", std::string(50, 'z')}), (V{1, 0}));
}

TEST(DataOps, WordRepetitionCountsRepeatedNgrams) {
  // rep_len 2, ratio = (sum of counts > 1) / (sum of counts):
  //   "a b a b a": a_b 2, b_a 2 -> 4/4          "A b c a B": a_b 2, b_c 1, c_a 1 -> 2/4 (lowercased)
  //   "one two three four": 0                   "word": no bigram -> 0
  //   "a\tb\n\na  b": words a b a b: a_b 2, b_a 1 -> 2/3
  //   "ÉTÉ x été x": été_x 2, x_été 1 -> 2/3 (Latin-1 lowercased)
  const std::vector<std::string> t = {"a b a b a",   "A b c a B", "one two three four", "word", "a\tb\n\na  b",
                                      "ÉTÉ x été x", ""};
  EXPECT_EQ(keep_of("word_repetition_filter", R"({"rep_len": 2})", t), (V{0, 1, 1, 1, 0, 0, 1}));
  EXPECT_EQ(keep_of("word_repetition_filter", R"({"rep_len": 2, "min_ratio": 0.6, "max_ratio": 0.7})", t),
            (V{0, 0, 0, 0, 1, 1, 0}));
}

TEST(DataOps, SpecialCharactersRatio) {
  // ratio = #(not letter / digit / space) / #code points, kept when <= 0.25 by default.
  const std::vector<std::string> t = {
      "hello world",   // 0
      "ab!!",          // 2/4
      "abc!",          // 1/4: kept (bound included)
      "héllo, 世界",   // 1/9
      "😀😀a",           // 2/3
      "",              // 0
      "\377\376ab",    // invalid bytes are special: 2/4
      "Привет, мир!",  // 2/12
      "١٢٣ abc",       // Arabic-Indic digits: 0
      "नमस्ते",          // vowel signs are letters: 0
  };
  EXPECT_EQ(keep_of("special_characters_filter", "{}", t), (V{1, 0, 1, 1, 0, 1, 0, 1, 1, 1}));
  EXPECT_EQ(keep_of("special_characters_filter", R"({"min_ratio": 0.3, "max_ratio": 1})", t),
            (V{0, 1, 0, 0, 1, 0, 1, 0, 0, 0}));
}

TEST(DataOps, ScriptRatioFilter) {
  const std::string ru_en = "Привет мир hello";
  // ru_en: 9 Cyrillic + 5 Latin letters. "12345 !!!" and "" have no letters (ratio 0).
  const std::vector<std::string> t = {"hello", ru_en, "12345 !!!", "", "café"};
  EXPECT_EQ(keep_of("script_ratio_filter", "{}", t), (V{1, 0, 0, 0, 1}));
  EXPECT_EQ(keep_of("script_ratio_filter", R"({"script": "cyrillic", "min_ratio": 0.64})", t), (V{0, 1, 0, 0, 0}));
  EXPECT_EQ(keep_of("script_ratio_filter", R"({"script": "cyrillic", "min_ratio": 0.65})", t), (V{0, 0, 0, 0, 0}));
  // Japanese + Korean: all CJK; "中文 and English": 2 of 12 letters.
  EXPECT_EQ(keep_of("script_ratio_filter", R"({"script": "cjk"})", {"日本語のテキスト 한국어", "中文 and English"}),
            (V{1, 0}));
  const std::vector<std::pair<std::string, std::string>> one_script = {
      {"greek", "Ελληνικά"}, {"arabic", "مرحبا"}, {"hebrew", "שלום"}, {"devanagari", "नमस्ते"}, {"thai", "สวัสดี"}};
  for (const auto& [script, text] : one_script) {
    const std::string args = R"({"min_ratio": 1.0, "script": ")" + script + "\"}";
    EXPECT_EQ(keep_of("script_ratio_filter", args, {text, "latin"}), (V{1, 0})) << script;
  }
  const std::string m = config_error("script_ratio_filter", R"({"script": "klingon"})");
  EXPECT_NE(m.find("klingon"), std::string::npos) << m;
  EXPECT_NE(m.find("latin, cjk, cyrillic, arabic, greek, hebrew, devanagari, thai"), std::string::npos) << m;
}

TEST(DataOps, DocumentDeduplicatorKeepsFirstOccurrence) {
  const DataOpResult r =
      make_data_op("document_deduplicator", "{}")->apply(rows_of({"a", "b", "a", " a\n", "A", "", " "}));
  EXPECT_EQ(V(r.keep.begin(), r.keep.end()), (V{1, 1, 0, 0, 1, 1, 0}));  // stripped like Data-Juicer
  EXPECT_EQ(r.metrics.at("filtered_count"), 3);
  EXPECT_EQ(r.metrics.at("duplicate_count"), 3);
  EXPECT_EQ(keep_of("document_deduplicator", R"({"lowercase": true})", {"Hello", "hello", "HELLO!", "École", "école"}),
            (V{1, 0, 1, 1, 0}));
  const std::vector<std::string> t = {"Hello, world 1", "hello world", "Helloworld2", "Hello world!"};
  EXPECT_EQ(keep_of("document_deduplicator", R"({"lowercase": true, "ignore_non_character": true})", t),
            (V{1, 0, 0, 0}));
  EXPECT_EQ(keep_of("document_deduplicator", R"({"ignore_non_character": true})", t), (V{1, 1, 0, 0}));
}

TEST(DataOps, TextPatternFilter) {
  const std::vector<std::string> t = {"abc", "a1", "123", ""};
  EXPECT_EQ(keep_of("text_pattern_filter", R"({"pattern": "\\d+"})", t), (V{0, 1, 1, 0}));
  EXPECT_EQ(keep_of("text_pattern_filter", R"({"pattern": "\\d+", "mode": "full"})", t), (V{0, 0, 1, 0}));
  EXPECT_EQ(keep_of("text_pattern_filter", R"({"pattern": "\\d+", "keep_matching": false})", t), (V{1, 0, 0, 1}));
  EXPECT_EQ(keep_of("text_pattern_filter", R"({"pattern": "^$", "mode": "full"})", t), (V{0, 0, 0, 1}));
  std::string m = config_error("text_pattern_filter", R"({"pattern": "a(b"})");
  EXPECT_NE(m.find("'a(b'"), std::string::npos) << m;
  EXPECT_NE(m.find("not a valid ECMAScript regular expression"), std::string::npos) << m;
  m = config_error("text_pattern_filter", "{}");
  EXPECT_NE(m.find("pattern must be a regular expression"), std::string::npos) << m;
  m = config_error("text_pattern_filter", R"({"pattern": "x", "mode": "partial"})");
  EXPECT_NE(m.find("mode must be 'search' or 'full', got \"partial\""), std::string::npos) << m;
}

TEST(DataOps, JsonFormatFilter) {
  const std::vector<std::string> t = {R"({"a": 1})",
                                      "[1, 2]",
                                      "42",
                                      "not json",
                                      "",
                                      "```json\n{\"a\": 1, \"b\": 2}\n```",
                                      "```\n[1]\n```",
                                      R"({"a": 1} trailing)",
                                      "  {\"b\": 2}\n",
                                      "```JSON {\"b\": 2}```",
                                      "```json\n{\"a\": 1}"};  // unclosed fence
  EXPECT_EQ(keep_of("json_format_filter", "{}", t), (V{1, 1, 1, 0, 0, 1, 1, 0, 1, 1, 0}));
  EXPECT_EQ(keep_of("json_format_filter", R"({"require_object": true})", t), (V{1, 0, 0, 0, 0, 1, 0, 0, 1, 1, 0}));
  EXPECT_EQ(keep_of("json_format_filter", R"({"required_keys": ["a"]})", t), (V{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(keep_of("json_format_filter", R"({"required_keys": ["a", "b"]})", t), (V{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0}));
  const std::string m = config_error("json_format_filter", R"({"required_keys": "a"})");
  EXPECT_NE(m.find("required_keys must be a list of texts, got \"a\""), std::string::npos) << m;
}

TEST(DataOps, ArgumentErrorsNameOperatorArgumentValueAndExpectation) {
  std::string m = config_error("text_length_filter", R"({"min_length": 3})");
  EXPECT_NE(m.find("data operator 'text_length_filter': unknown argument 'min_length'"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'min_len'"), std::string::npos) << m;
  EXPECT_NE(m.find("accepted: min_len, max_len"), std::string::npos) << m;
  m = config_error("text_length_filter", R"({"min_len": "3"})");
  EXPECT_NE(m.find("'text_length_filter': min_len must be a number, got \"3\""), std::string::npos) << m;
  m = config_error("character_repetition_filter", R"({"rep_len": 0})");
  EXPECT_NE(m.find("rep_len must be an integer >= 1, got 0"), std::string::npos) << m;
  m = config_error("word_repetition_filter", R"({"rep_len": 2.5})");
  EXPECT_NE(m.find("rep_len must be an integer >= 1, got 2.5"), std::string::npos) << m;
  EXPECT_EQ(config_error("word_repetition_filter", R"({"rep_len": 3.0})"), "");  // integral float is fine
  m = config_error("special_characters_filter", R"({"min_ratio": 0.5, "max_ratio": 0.1})");
  EXPECT_NE(m.find("min_ratio must be <= max_ratio"), std::string::npos) << m;
  m = config_error("document_deduplicator", R"({"lowercase": "yes"})");
  EXPECT_NE(m.find("lowercase must be true or false, got \"yes\""), std::string::npos) << m;
  m = config_error("document_minhash_deduplicator", R"({"jaccard_threshold": 1.5})");
  EXPECT_NE(m.find("jaccard_threshold must be a number in [0, 1], got 1.5"), std::string::npos) << m;
  m = config_error("document_minhash_deduplicator", R"({"num_bands": 20, "num_rows_per_band": 10})");
  EXPECT_NE(m.find("num_bands * num_rows_per_band <= num_permutations (128)"), std::string::npos) << m;
  m = config_error("document_minhash_deduplicator", R"({"num_permutations": 0})");
  EXPECT_NE(m.find("num_permutations must be an integer >= 1, got 0"), std::string::npos) << m;
  m = config_error("text_length_filter", "{bad");
  EXPECT_NE(m.find("args are not valid JSON"), std::string::npos) << m;
  m = config_error("text_length_filter", "[1]");
  EXPECT_NE(m.find("args must be a mapping, got [1]"), std::string::npos) << m;
  EXPECT_EQ(config_error("text_length_filter", "null"), "");
}

TEST(MinHash, LshParamsMatchDatasketch) {
  // (threshold, num_perm) -> (b, r) from datasketch's _optimal_param re-implemented in Python with
  // Simpson integration; only cases whose runner-up error is >= 5e-5 away (no near ties).
  struct Case {
    double t;
    int64_t k, b, r;
  };
  const std::vector<Case> cases = {{0.3, 16, 8, 2},    {0.5, 16, 5, 3},   {0.7, 16, 3, 5},   {0.8, 16, 2, 8},
                                   {0.9, 16, 1, 15},   {0.3, 64, 21, 3},  {0.5, 64, 14, 4},  {0.7, 64, 8, 8},
                                   {0.8, 64, 5, 11},   {0.9, 64, 3, 21},  {0.5, 128, 25, 5}, {0.7, 128, 14, 9},
                                   {0.8, 128, 9, 13},  {0.3, 256, 64, 4}, {0.5, 256, 42, 6}, {0.7, 256, 25, 10},
                                   {0.8, 256, 17, 15}, {0.9, 256, 9, 28}};
  for (const auto& c : cases) EXPECT_EQ(optimal_lsh_params(c.t, c.k), (LshParams{c.b, c.r})) << c.t << " " << c.k;
  EXPECT_EQ(optimal_lsh_params(0.5, 1), (LshParams{1, 1}));
}

// n words drawn from a vocabulary of random lowercase words.
class TextGen {
 public:
  explicit TextGen(uint64_t seed, size_t vocab = 5000) : rng_(seed) {
    std::uniform_int_distribution<int> len(3, 8), letter('a', 'z');
    for (size_t i = 0; i < vocab; ++i) {
      std::string w;
      for (int k = len(rng_); k > 0; --k) w.push_back(static_cast<char>(letter(rng_)));
      vocab_.push_back(w);
    }
  }
  std::vector<std::string> words(size_t n) {
    std::vector<std::string> w;
    for (size_t i = 0; i < n; ++i) w.push_back(word());
    return w;
  }
  std::string word() { return vocab_[std::uniform_int_distribution<size_t>(0, vocab_.size() - 1)(rng_)]; }
  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
  std::vector<std::string> vocab_;
};

std::string join(const std::vector<std::string>& w) {
  std::string s;
  for (const auto& x : w) s += (s.empty() ? "" : " ") + x;
  return s;
}

// w with word `at` replaced by a different vocabulary word.
std::vector<std::string> change_word(std::vector<std::string> w, size_t at, TextGen& g) {
  std::string x = g.word();
  while (x == w[at]) x = g.word();
  w[at] = x;
  return w;
}

TEST(MinHash, RemovesNearDuplicatesKeepsUnrelated) {
  TextGen g(7);
  const std::vector<std::string> a = g.words(60), b = g.words(60), c = g.words(60);
  // The last word changed: 1 of 56 5-shingles differs, Jaccard 55/57 = 0.96, found by the default
  // bands (14 x 9) with probability 1 - 1e-8.
  const std::vector<std::string> rows = {join(a), join(b), join(change_word(a, 59, g)), join(c), join(a)};
  EXPECT_EQ(keep_of("document_minhash_deduplicator", "{}", rows), (V{1, 1, 0, 1, 0}));
  // A middle word changed: 5 shingles differ, Jaccard 51/61 = 0.84; 32 bands of 4 rows find it with
  // probability 1 - 5e-10 (the default 14 x 9 with ~0.95).
  const std::vector<std::string> mid = {join(b), join(change_word(b, 30, g)), join(c)};
  const std::string bands = R"({"num_bands": 32, "num_rows_per_band": 4})";
  EXPECT_EQ(keep_of("document_minhash_deduplicator", bands, mid), (V{1, 0, 1}));
  // Half the words changed: not a near duplicate.
  std::vector<std::string> half = a;
  for (size_t i = 0; i < 60; i += 2) half = change_word(half, i, g);
  EXPECT_EQ(keep_of("document_minhash_deduplicator", bands, {join(a), join(half)}), (V{1, 1}));
}

TEST(MinHash, ShortTextsCaseAndWhitespace) {
  // Fewer words than ngram_size: the whole word sequence is one shingle (so exact-or-nothing).
  EXPECT_EQ(keep_of("document_minhash_deduplicator", "{}", {"a b c", "a  b\tc", "a b d", "", ""}), (V{1, 0, 1, 1, 0}));
  TextGen g(11);
  const std::string t = join(g.words(40));
  std::string upper = t;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](char ch) { return static_cast<char>(ch - 32 * (ch >= 'a' && ch <= 'z')); });
  EXPECT_EQ(keep_of("document_minhash_deduplicator", "{}", {t, upper}), (V{1, 0}));
  EXPECT_EQ(keep_of("document_minhash_deduplicator", R"({"lowercase": false})", {t, upper}), (V{1, 1}));
}

TEST(MinHash, PlantedPairsInTwoThousandRows) {
  TextGen g(2024);
  std::vector<std::string> originals;
  for (int i = 0; i < 1800; ++i) originals.push_back(join(g.words(60)));
  // Rows: the 1800 originals in order, then 200 one-word variants of distinct originals, each inserted
  // at a random place after its original.
  struct Row {
    std::string text;
    bool variant;
  };
  std::vector<Row> rows;
  for (const auto& o : originals) rows.push_back({o, false});
  std::vector<size_t> pick(originals.size());
  for (size_t i = 0; i < pick.size(); ++i) pick[i] = i;
  std::shuffle(pick.begin(), pick.end(), g.rng());
  for (size_t k = 0; k < 200; ++k) {
    const std::string& o = originals[pick[k]];
    std::vector<std::string> w;
    for (size_t s = 0, e; s <= o.size(); s = e + 1) {
      e = std::min(o.find(' ', s), o.size());
      w.push_back(o.substr(s, e - s));
    }
    const size_t at = std::uniform_int_distribution<size_t>(0, 59)(g.rng());
    const auto pos = std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.text == o; }) - rows.begin();
    const size_t ins = std::uniform_int_distribution<size_t>(static_cast<size_t>(pos) + 1, rows.size())(g.rng());
    rows.insert(rows.begin() + static_cast<std::ptrdiff_t>(ins), Row{join(change_word(w, at, g)), true});
  }
  std::vector<std::string> texts;
  V expected;
  for (const auto& r : rows) {
    texts.push_back(r.text);
    expected.push_back(r.variant ? 0 : 1);
  }
  const std::string args = R"({"num_bands": 32, "num_rows_per_band": 4})";
  const V keep = keep_of("document_minhash_deduplicator", args, texts);
  EXPECT_EQ(keep, expected);
  // Deterministic: a second operator made from the same args decides the same.
  EXPECT_EQ(keep_of("document_minhash_deduplicator", args, texts), keep);
  const DataOpResult r = make_data_op("document_minhash_deduplicator", args)->apply(rows_of(texts));
  EXPECT_EQ(r.metrics.at("duplicate_count"), 200);
  // Another seed: other permutations, same decisions on this clear-cut data.
  EXPECT_EQ(keep_of("document_minhash_deduplicator", R"({"num_bands": 32, "num_rows_per_band": 4, "seed": 7})", texts),
            expected);
}

}  // namespace
}  // namespace trinity::pipeline
