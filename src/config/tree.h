// Internal to src/config: the YAML document as a small owned tree that remembers where every value
// came from (file line, or the `--set` override that wrote it). The loader applies overrides and
// `${...}` interpolation on this tree, then reads typed sections from it (section.h). Plain scalars
// keep their text; the reader decides the type (OmegaConf converts per field the same way), quoted
// scalars are always strings.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace trinity::config::detail {

// Limits on what a config may expand to. Real configs are a few KB (hundreds of values); a hostile
// one ("billion laughs": YAML aliases of aliases, `${x0}${x0}` chains) fails within milliseconds with a
// ConfigError naming the key instead of exhausting memory. Duplicate mapping keys are errors too.
inline constexpr size_t kMaxConfigNodes = 100'000;           // values (scalars, mappings, lists), aliases expanded
inline constexpr size_t kMaxConfigBytes = size_t{16} << 20;  // scalar text, aliases and ${...} expanded
inline constexpr size_t kMaxConfigDepth = 100;               // nesting of mappings / lists
inline constexpr size_t kMaxInterpolationDepth = 64;         // ${a} -> ${b} -> ... resolved inside one another

struct Tree {
  enum class Kind { kNull, kScalar, kSeq, kMap };
  Kind kind = Kind::kNull;
  std::string scalar;   // text of a scalar
  bool quoted = false;  // '...' or "...": a string, never a number/bool
  std::vector<std::pair<std::string, Tree>> map;  // in document order
  std::vector<Tree> seq;
  int line = 0;        // 1-based line in the file; 0 = unknown
  std::string origin;  // "" = the config file; else e.g. "--set model.lr=1"

  bool is_null() const { return kind == Kind::kNull; }
  bool is_map() const { return kind == Kind::kMap; }
  bool is_seq() const { return kind == Kind::kSeq; }
  bool is_scalar() const { return kind == Kind::kScalar; }
  const Tree* find(const std::string& key) const;
  Tree* find(const std::string& key);
  Tree& get_or_add(const std::string& key);  // map entry, added as null if absent (turns null into map)
  void erase(const std::string& key);
  std::string short_repr() const;  // 'text' for scalars, "a mapping" / "a list" / "null"
};

// Values in the tree (1 for a scalar or null).
size_t tree_node_count(const Tree& t);

// Parses YAML text. ConfigError "<file>:<line>: ..." on a syntax error, a duplicate key ("duplicate key
// 'a.b' (first at line 7)") or a document over the limits above.
Tree tree_from_yaml(const std::string& text, const std::string& file);

// "buffer.explorer_input.tasksets[0].path" or "...tasksets.0.path" -> node, or nullptr.
const Tree* tree_at(const Tree& root, const std::string& dotted);

// Applies one "a.b.c=value" override; value is parsed as a YAML scalar / flow collection.
// Missing intermediate mappings are created (an unknown key then fails in the section reader).
void tree_set(Tree& root, const std::string& assignment);
// Sets an already-built value at a dotted path (creating mappings).
void tree_put(Tree& root, const std::string& dotted, Tree value);

// Resolves ${oc.env:VAR}, ${oc.env:VAR,default} and ${a.b.c} in every string scalar (recursively,
// with cycle detection and the limits above; spliced values are not interpolated again). A scalar that is exactly one
// interpolation takes the referenced value (mapping or scalar, quotedness included); otherwise the text is spliced.
// `where(node)` formats a location for messages.
void tree_interpolate(Tree& root, const std::string& file);

// "<file>:<line>" or "--set k=v" for messages ("<file>" when the line is unknown).
std::string tree_location(const Tree& node, const std::string& file);

// "did you mean 'x'?" when a candidate is close (core/names.h's rule), else "".
std::string did_you_mean(const std::string& key, const std::vector<std::string>& candidates);

}  // namespace trinity::config::detail
