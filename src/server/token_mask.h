// Token mask for constrained decoding: a trie over the byte strings of a tokenizer's vocabulary
// (built once per tokenizer) walked together with a GrammarMatcher, so a prefix shared by many
// tokens is checked once; a token is allowed when all its bytes keep the grammar alive (byte-level
// BPE tokens may span several grammar symbols or split a UTF-8 character: bytes are what counts).
// Special tokens are never allowed as text (non-special added tokens, e.g. Qwen's <tool_call>, are
// their content); the end ids (EOS, stop ids) are allowed exactly
// when the output so far is a complete value. GrammarConstraintFactory plugs this into the engine.
// Inside a free JSON string (almost every token is valid there, so the walk visits the whole trie)
// a per-vocabulary precomputation replaces the walk; the mask is the same.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/constraint.h"
#include "server/json_grammar.h"

namespace trinity::tok {
class Tokenizer;
}

namespace trinity::server {

class TokenTrie {
 public:
  explicit TokenTrie(const tok::Tokenizer& tok);
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> kids;  // byte -> node index, sorted
    std::vector<int32_t> ids;                       // tokens whose bytes end here
  };
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::string& bytes(int32_t id) const;  // "" for ids that are never text
  int64_t vocab_size() const { return static_cast<int64_t>(bytes_.size()); }
  // Fed to a JSON string's content from its plain state: tokens that stay inside the string (valid
  // whatever follows the string) and tokens that reach its closing quote (the rest needs the grammar).
  const std::vector<int32_t>& string_stay() const { return string_stay_; }
  const std::vector<int32_t>& string_exit() const { return string_exit_; }

 private:
  std::vector<Node> nodes_;
  std::vector<std::string> bytes_;
  std::vector<int32_t> string_stay_, string_exit_;
};

// Marks allowed[id] = 1 for every text token whose bytes keep `m` alive. Inside free string content
// (GrammarMatcher::in_string_content) it takes the precomputed string_stay() set and checks only the
// string_exit() tokens with the matcher; elsewhere it walks the trie (allowed_tokens_walk).
void allowed_tokens(const TokenTrie& trie, const GrammarMatcher& m, std::vector<uint8_t>& allowed);
// The trie walk alone, for every state (the fast path's oracle and benchmark baseline).
void allowed_tokens_walk(const TokenTrie& trie, const GrammarMatcher& m, std::vector<uint8_t>& allowed);

class GrammarConstraintFactory : public engine::ConstraintFactory {
 public:
  GrammarConstraintFactory(std::shared_ptr<const JsonGrammar> g, std::shared_ptr<const TokenTrie> trie,
                           std::vector<int32_t> end_ids)
      : g_(std::move(g)), trie_(std::move(trie)), end_(std::move(end_ids)) {}
  std::unique_ptr<engine::Constraint> start() const override;

 private:
  std::shared_ptr<const JsonGrammar> g_;
  std::shared_ptr<const TokenTrie> trie_;
  std::vector<int32_t> end_;
};

}  // namespace trinity::server
