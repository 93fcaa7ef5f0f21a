// Golden test: trinity's tokenizer vs @huggingface/tokenizers on the real Qwen3 and Llama 3 files
// (and a GPT-2 / SmolLM style ByteLevel(use_regex, add_prefix_space) variant of Qwen3),
// over the deterministic corpus of tests/js/corpus.mjs: exact ids, exact decoded text, decoding of
// random id sequences (partial UTF-8 -> U+FFFD), and streaming decode == decode.
#include <gtest/gtest.h>

#include "oracle_util.h"
#include "tokenizer/tokenizer.h"

namespace trinity::tok {
namespace {

using testing::model_dir;

class GoldenTokenizer : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTokenizer, MatchesHuggingFaceJs) {
  testing::require_node_modules();
  static std::string out;
  if (out.empty()) out = testing::run_oracle("tokenizer_oracle.mjs", "tokenizer");
  const std::string name = GetParam();
  const Tokenizer tok = Tokenizer::load(name.find('_') == std::string::npos ? model_dir(name) : out + "/variants/" + name);
  const auto rows = testing::read_jsonl(out + "/" + name + ".jsonl");
  ASSERT_GT(rows.size(), 700u) << "oracle produced too few cases";
  int n_text = 0, n_decode = 0, failures = 0, n_skipped_js_regex = 0;
  for (size_t i = 0; i < rows.size() && failures < 20; ++i) {
    const auto& r = rows[i];
    const std::string expect_decoded = r["decoded"].get<std::string>();
    if (r.contains("text")) {
      const std::string text = r["text"].get<std::string>();
      // The JS ByteLevel pre-tokenizer runs GPT-2's regex as a native JS RegExp, whose \s includes
      // U+FEFF and excludes U+0085; Oniguruma (HF Rust tokenizers, and trinity) does the opposite.
      // The Split-based Qwen3/Llama 3 pipelines go through the oracle's Oniguruma emulation and are
      // compared on every string.
      if (name == "qwen3_gpt2style" &&
          (text.find("\xC2\x85") != std::string::npos || text.find("\xEF\xBB\xBF") != std::string::npos)) {
        ++n_skipped_js_regex;
        continue;
      }
      const auto want = r["ids"].get<std::vector<int32_t>>();
      const auto got = tok.encode(text);
      if (got != want) {
        ++failures;
        ADD_FAILURE() << name << " row " << i << " ids differ for text " << nlohmann::json(text).dump()
                      << "\n want " << nlohmann::json(want).dump() << "\n got  " << nlohmann::json(got).dump();
        continue;
      }
      EXPECT_EQ(tok.decode(got), expect_decoded) << name << " row " << i;
      ++n_text;
    } else {
      const auto ids = r["decode_ids"].get<std::vector<int32_t>>();
      EXPECT_EQ(tok.decode(ids), expect_decoded) << name << " row " << i << " ids " << nlohmann::json(ids).dump();
      ++n_decode;
    }
    // Streaming decode releases the same text (clean-up is a whole-string pass, so compare without it).
    const auto ids = r.contains("text") ? r["ids"].get<std::vector<int32_t>>() : r["decode_ids"].get<std::vector<int32_t>>();
    StreamDecoder sd(tok);
    std::string streamed;
    for (int32_t id : ids) {
      std::string piece = sd.push(id);
      streamed += piece;
    }
    streamed += sd.finish();
    const bool cleanup = tok.clean_up_tokenization_spaces();
    EXPECT_EQ(cleanup ? clean_up_tokenization(streamed) : streamed, expect_decoded) << name << " row " << i << " (stream)";
  }
  EXPECT_EQ(failures, 0);
  EXPECT_LE(n_skipped_js_regex, 30);
  EXPECT_GT(n_text, 600);
  EXPECT_GT(n_decode, 100);
}

INSTANTIATE_TEST_SUITE_P(Models, GoldenTokenizer, ::testing::Values("qwen3", "llama3", "qwen3_gpt2style"));

}  // namespace
}  // namespace trinity::tok
