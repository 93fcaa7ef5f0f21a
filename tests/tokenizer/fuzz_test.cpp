// Mutation fuzzing of the parsers: chat templates (the real Qwen2.5 / Llama 3.1 templates and
// snippets, mutated by byte flips, token splices, deletions and truncation), tokenizer.json text,
// encode of random bytes and decode of random ids. Every input must either succeed or throw a
// trinity::Error; anything else (another exception type, a crash, a hang) fails. Runs for
// TRINITY_FUZZ_SECONDS (default 20) per target; `TRINITY_FUZZ_SECONDS=300 tokenizer_fuzz_test`
// is the few-minutes run documented in docs/tokenizer.md.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file.h"
#include "core/rng.h"
#include "tokenizer/jinja.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace trinity::tok {
namespace {

double budget_seconds() {
  const char* s = std::getenv("TRINITY_FUZZ_SECONDS");
  return s ? std::atof(s) : 20.0;
}

struct Clock {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  bool done(double limit) const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > limit;
  }
};

std::string mutate(std::string s, Rng& rng) {
  static const char* kSplices[] = {"{%", "%}", "{{", "}}", "{#", "#}", "-%}", "{%-", "endif", "endfor", "(", ")", "[",
                                   "]", "'", "\"", "|", ".", ",", " is ", " not ", " in ", "::", "\\", "\xC3", "\xFF",
                                   "{% for x in y %}", "{% if %}", "{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}"};
  const int n = 1 + static_cast<int>(rng.uniform() * 6);
  for (int k = 0; k < n && !s.empty(); ++k) {
    const size_t pos = static_cast<size_t>(rng.uniform() * static_cast<double>(s.size()));
    switch (static_cast<int>(rng.uniform() * 5)) {
      case 0: s[pos] = static_cast<char>(rng.uniform() * 256); break;
      case 1: s.insert(pos, kSplices[static_cast<size_t>(rng.uniform() * std::size(kSplices))]); break;
      case 2: s.erase(pos, 1 + static_cast<size_t>(rng.uniform() * 20)); break;
      case 3: s.resize(pos); break;
      default: {
        const size_t from = static_cast<size_t>(rng.uniform() * static_cast<double>(s.size()));
        s.insert(pos, s.substr(from, static_cast<size_t>(rng.uniform() * 40)));
      }
    }
  }
  return s;
}

TEST(Fuzz, ChatTemplates) {
  const std::string dir = std::string(TRINITY_SOURCE_DIR) + "/tests/tokenizer/templates/";
  const std::vector<std::string> seeds = {
      file::read_all(dir + "qwen2.5.jinja"), file::read_all(dir + "llama3.1.jinja"),
      "{% set ns = namespace(a=1) %}{% for m in messages[::-1] %}{{ m.content.split('x')[-1].strip('\\n') | tojson }}"
      "{% if loop.last %}{{ ns.a + loop.index0 }}{% endif %}{% endfor %}{{ raise_exception('boom') if false }}"};
  const jinja::Value ctx = jinja::Value::from_json(
      R"({"messages": [{"role": "system", "content": "sx"}, {"role": "user", "content": "hi x there"},
          {"role": "assistant", "content": "ok", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]},
          {"role": "tool", "content": "r"}], "tools": [{"type": "function", "function": {"name": "f"}}],
          "add_generation_prompt": true, "bos_token": "<s>"})");
  Rng rng(7);
  Clock clock;
  size_t runs = 0, errors = 0;
  while (!clock.done(budget_seconds())) {
    const std::string src = mutate(seeds[runs % seeds.size()], rng);
    try {
      jinja::Template t(src, "fuzz");
      t.render(ctx);
    } catch (const Error&) {
      ++errors;
    } catch (const std::exception& e) {
      FAIL() << "non-trinity exception " << e.what() << " for template:\n" << src;
    }
    ++runs;
  }
  std::printf("chat templates: %zu runs, %zu clean errors\n", runs, errors);
  EXPECT_GT(runs, 100u);
}

TEST(Fuzz, TokenizerJsonAndText) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[uni::bytes_to_byte_level(std::string(1, static_cast<char>(b)))] = b;
  vocab["he"] = 256;
  vocab["ĠĠ"] = 257;
  nlohmann::json j = {
      {"added_tokens", {{{"id", 258}, {"content", "<|x|>"}, {"special", true}}}},
      {"normalizer", {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}}}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", "\\p{L}+|\\p{N}|\\s+(?!\\S)|\\s+|[^\\s\\p{L}\\p{N}]+"}}}, {"behavior", "Isolated"}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"h e", "Ġ Ġ"}}}}};
  const std::string seed = j.dump();
  const Tokenizer good = Tokenizer::from_json(seed);
  Rng rng(11);
  Clock clock;
  size_t runs = 0, errors = 0;
  while (!clock.done(budget_seconds())) {
    // Mutated tokenizer.json.
    const std::string text = mutate(seed, rng);
    try {
      const Tokenizer t = Tokenizer::from_json(text, "fuzz.json");
      t.decode(t.encode("he said  <|x|> 12 \xC3\xA9"));
    } catch (const Error&) {
      ++errors;
    } catch (const std::exception& e) {
      FAIL() << "non-trinity exception " << e.what();
    }
    // Random bytes to encode, random ids to decode and stream.
    std::string bytes(static_cast<size_t>(rng.uniform() * 64), '\0');
    for (char& c : bytes) c = static_cast<char>(rng.uniform() < 0.7 ? 32 + rng.uniform() * 95 : rng.uniform() * 256);
    try {
      const auto ids = good.encode(bytes);
      EXPECT_EQ(good.decode(ids), uni::nfc(bytes));  // valid UTF-8 round-trips up to NFC
    } catch (const ValueError&) {
      ++errors;
    }
    std::vector<int32_t> ids(static_cast<size_t>(rng.uniform() * 16));
    for (auto& id : ids) id = static_cast<int32_t>(rng.uniform() * 259);
    StreamDecoder sd(good);
    std::string streamed;
    for (int32_t id : ids) streamed += sd.push(id);
    streamed += sd.finish();
    EXPECT_EQ(streamed, good.decode(ids));
    EXPECT_EQ(uni::find_invalid_utf8(streamed), std::string::npos);
    runs += 1;
  }
  std::printf("tokenizer: %zu runs, %zu clean errors\n", runs, errors);
  EXPECT_GT(runs, 100u);
}

}  // namespace
}  // namespace trinity::tok
