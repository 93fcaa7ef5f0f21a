// JSON-schema grammar for structured output: a schema (or "any JSON object") is compiled into a
// tree of grammar nodes, and a byte-level pushdown matcher walks it. The matcher state is a small
// set of alternative stacks (an NFA over stacks: anyOf, enums and optional object keys branch), so
// a byte either keeps at least one stack alive (valid prefix) or kills them all.
// Output shape: compact JSON; one optional space after ':' and ','; object keys in the schema's
// order; numbers of at most kMaxDigits digits per part. Supported keywords: type (one type or a list),
// properties, required, additionalProperties, items, enum, const, anyOf / oneOf, $ref to "#/$defs/..."
// or "#/definitions/...", minItems / maxItems; description-like annotations are ignored. Any other
// keyword is an ApiError(400) naming it (strict or not: nothing is silently unenforced).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trinity::server {

struct GrammarNode;

class JsonGrammar {
 public:
  // `schema_json`: JSON text of a JSON schema; `param` names the request field in errors.
  // `strict` (json_schema.strict): every object needs additionalProperties false and all its
  // properties required, as OpenAI's strict mode demands.
  static std::shared_ptr<const JsonGrammar> from_schema(std::string_view schema_json, const std::string& param);
  static std::shared_ptr<const JsonGrammar> from_schema(std::string_view schema_json, const std::string& param,
                                                        bool strict);
  // One call, in the Qwen / Hermes syntax, of one of `tools` (name, JSON text of its parameters
  // schema; "" = any arguments object): <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>.
  static std::shared_ptr<const JsonGrammar> tool_call(const std::vector<std::pair<std::string, std::string>>& tools,
                                                      const std::string& param);
  // Any JSON object (response_format json_object).
  static std::shared_ptr<const JsonGrammar> any_object();
  ~JsonGrammar();
  const GrammarNode* root() const { return root_; }

 private:
  JsonGrammar() = default;
  std::vector<std::unique_ptr<GrammarNode>> nodes_;
  const GrammarNode* root_ = nullptr;
  friend struct GrammarBuilder;
};

inline constexpr int kMaxDigits = 15;

// Incremental matcher over bytes. Copyable (the token mask clones it along a trie walk).
class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const JsonGrammar> g);
  // Feeds one byte; false (and the state unchanged) when it would leave the grammar.
  bool feed(uint8_t c);
  bool feed(std::string_view bytes);  // all or nothing
  // The output so far is a complete value of the grammar (end-of-generation allowed).
  bool accepting() const;
  // Nothing but the end can follow (used to stop offering text tokens).
  bool finished() const;
  // Every alternative is inside a JSON string's content (not in an escape), so bytes that stay in
  // the string keep all of them alive and only a closing quote lets the rest of the grammar in
  // (the token mask's fast path).
  bool in_string_content() const;

  struct Frame {
    const GrammarNode* node;
    int32_t st, idx, aux;
    bool operator==(const Frame&) const = default;
    auto operator<=>(const Frame&) const = default;
  };
  using Stack = std::vector<Frame>;

 private:
  std::shared_ptr<const JsonGrammar> g_;
  std::vector<Stack> alts_;
};

}  // namespace trinity::server
