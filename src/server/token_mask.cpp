// Vocabulary trie and the grammar constraint (see token_mask.h).
#include "server/token_mask.h"

#include <algorithm>
#include <limits>
#include <string_view>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace trinity::server {

namespace {

enum class StringClass { kInvalid, kStay, kExit };

// Bytes fed to a JSON string's content automaton (GrammarMatcher's kString) from its plain state.
StringClass string_class(const std::string& b) {
  int st = 1, hex = 0;  // 1 plain, 2 after a backslash, 3 in \uXXXX (hex digits seen)
  for (const char ch : b) {
    const auto c = static_cast<uint8_t>(ch);
    if (st == 1) {
      if (c == '"') return StringClass::kExit;
      if (c == '\\')
        st = 2;
      else if (c < 0x20)
        return StringClass::kInvalid;
    } else if (st == 2) {
      if (c == 'u')
        st = 3, hex = 0;
      else if (std::string_view("\"\\/bfnrt").find(static_cast<char>(c)) != std::string_view::npos)
        st = 1;
      else
        return StringClass::kInvalid;
    } else {
      const bool is_hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
      if (!is_hex) return StringClass::kInvalid;
      if (++hex == 4) st = 1;
    }
  }
  return StringClass::kStay;
}

}  // namespace

TokenTrie::TokenTrie(const tok::Tokenizer& tok) {
  const int32_t v = static_cast<int32_t>(tok.vocab_size());
  bytes_.resize(static_cast<size_t>(v));
  nodes_.emplace_back();
  for (int32_t id = 0; id < v; ++id) {
    if (tok.is_special(id) || tok.id_to_token(id).empty()) continue;
    const std::string& b = tok.token_bytes(id);
    if (b.empty()) continue;
    bytes_[static_cast<size_t>(id)] = b;
    int32_t at = 0;
    for (char ch : b) {
      const auto c = static_cast<uint8_t>(ch);
      auto& kids = nodes_[static_cast<size_t>(at)].kids;
      auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(c, int32_t{-1}));
      if (it != kids.end() && it->first == c) {
        at = it->second;
      } else {
        const auto fresh = static_cast<int32_t>(nodes_.size());
        kids.insert(it, {c, fresh});
        nodes_.emplace_back();
        at = fresh;
      }
    }
    nodes_[static_cast<size_t>(at)].ids.push_back(id);
    switch (string_class(b)) {
      case StringClass::kStay:
        string_stay_.push_back(id);
        break;
      case StringClass::kExit:
        string_exit_.push_back(id);
        break;
      case StringClass::kInvalid:
        break;
    }
  }
}

const std::string& TokenTrie::bytes(int32_t id) const {
  static const std::string none;
  return id >= 0 && id < vocab_size() ? bytes_[static_cast<size_t>(id)] : none;
}

namespace {

void walk(const TokenTrie& trie, int32_t at, const GrammarMatcher& m, std::vector<uint8_t>& allowed) {
  for (const auto& [c, kid] : trie.nodes()[static_cast<size_t>(at)].kids) {
    GrammarMatcher next = m;
    if (!next.feed(c)) continue;
    for (int32_t id : trie.nodes()[static_cast<size_t>(kid)].ids) allowed[static_cast<size_t>(id)] = 1;
    walk(trie, kid, next, allowed);
  }
}

class GrammarConstraint : public engine::Constraint {
 public:
  GrammarConstraint(std::shared_ptr<const JsonGrammar> g, std::shared_ptr<const TokenTrie> trie,
                    std::vector<int32_t> end)
      : m_(std::move(g)), trie_(std::move(trie)), end_(std::move(end)) {}

  void mask(float* logits, int64_t v) override {
    allowed_.assign(static_cast<size_t>(v), 0);
    if (!m_.finished()) allowed_tokens(*trie_, m_, allowed_);
    if (m_.accepting())
      for (int32_t id : end_)
        if (id >= 0 && id < v) allowed_[static_cast<size_t>(id)] = 1;
    for (int64_t i = 0; i < v; ++i)
      if (!allowed_[static_cast<size_t>(i)]) logits[i] = -std::numeric_limits<float>::infinity();
  }

  void advance(int32_t token) override {
    if (std::find(end_.begin(), end_.end(), token) != end_.end()) return;
    const std::string& b = trie_->bytes(token);
    if (b.empty() || !m_.feed(b))
      throw ValueError("grammar", strcat("token ", token, " does not continue the structured output"));
  }

 private:
  GrammarMatcher m_;
  std::shared_ptr<const TokenTrie> trie_;
  std::vector<int32_t> end_;
  std::vector<uint8_t> allowed_;
};

}  // namespace

void allowed_tokens_walk(const TokenTrie& trie, const GrammarMatcher& m, std::vector<uint8_t>& allowed) {
  if (static_cast<int64_t>(allowed.size()) < trie.vocab_size())
    allowed.resize(static_cast<size_t>(trie.vocab_size()), 0);
  walk(trie, 0, m, allowed);
}

void allowed_tokens(const TokenTrie& trie, const GrammarMatcher& m, std::vector<uint8_t>& allowed) {
  if (!m.in_string_content()) return allowed_tokens_walk(trie, m, allowed);
  if (static_cast<int64_t>(allowed.size()) < trie.vocab_size())
    allowed.resize(static_cast<size_t>(trie.vocab_size()), 0);
  // Every alternative is in string content: a staying token keeps them all alive, an invalid one
  // kills them all, and a token with a closing quote depends on what follows the string.
  for (const int32_t id : trie.string_stay()) allowed[static_cast<size_t>(id)] = 1;
  for (const int32_t id : trie.string_exit()) {
    GrammarMatcher c = m;
    if (c.feed(trie.bytes(id))) allowed[static_cast<size_t>(id)] = 1;
  }
}

std::unique_ptr<engine::Constraint> GrammarConstraintFactory::start() const {
  return std::make_unique<GrammarConstraint>(g_, trie_, end_);
}

}  // namespace trinity::server
