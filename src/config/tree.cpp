// The config tree (tree.h): YAML -> Tree via yaml-cpp (private to this file), dotted-path lookup,
// `--set` overrides and OmegaConf-style interpolation: ${oc.env:VAR[,default]}, ${oc.decode:...} (nested
// interpolations resolved first) and ${a.b.c}.
#include "config/tree.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <unordered_map>

#include "core/error.h"
#include "core/names.h"

namespace trinity::config::detail {

namespace {

// YAML -> Tree with the limits of tree.h: aliases share one node in yaml-cpp, so copying them out is
// where a "billion laughs" document blows up; every node converted counts against kMaxConfigNodes and
// every scalar byte against kMaxConfigBytes. Duplicate keys of a mapping are errors naming both lines.
class Converter {
 public:
  explicit Converter(const std::string& file) : file_(file) {}

  Tree convert(const YAML::Node& n) {
    Tree t;
    t.line = n.Mark().line >= 0 ? n.Mark().line + 1 : 0;
    if (++nodes_ > kMaxConfigNodes)
      fail(t.line, strcat("the config expands to more than ", kMaxConfigNodes,
                          " values (YAML aliases of aliases, a 'billion laughs' document?)"));
    if (path_.size() > kMaxConfigDepth)
      fail(t.line, strcat("the config nests more than ", kMaxConfigDepth, " levels deep"));
    switch (n.Type()) {
      case YAML::NodeType::Scalar:
        t.kind = Tree::Kind::kScalar;
        t.scalar = n.Scalar();
        t.quoted = n.Tag() == "!";
        bytes_ += t.scalar.size();
        if (bytes_ > kMaxConfigBytes)
          fail(t.line, strcat("the config expands to more than ", kMaxConfigBytes >> 20,
                              " MiB of text (YAML aliases of aliases, a 'billion laughs' document?)"));
        break;
      case YAML::NodeType::Sequence:
        t.kind = Tree::Kind::kSeq;
        for (const auto& c : n) {
          path_.push_back(strcat("[", t.seq.size(), "]"));
          t.seq.push_back(convert(c));
          path_.pop_back();
        }
        break;
      case YAML::NodeType::Map: {
        t.kind = Tree::Kind::kMap;
        std::unordered_map<std::string, int> key_lines;  // key -> line of its first occurrence
        for (const auto& kv : n) {
          std::string key = kv.first.as<std::string>();
          const int key_line = kv.first.Mark().line + 1;
          path_.push_back("." + key);
          if (const auto [it, fresh] = key_lines.emplace(key, key_line); !fresh)
            fail(key_line, strcat("duplicate key '", dotted(), "' (first at line ", it->second, ")"), false);
          Tree v = convert(kv.second);
          path_.pop_back();
          if (v.line == 0) v.line = key_line;  // null values carry no mark
          t.map.emplace_back(std::move(key), std::move(v));
        }
        break;
      }
      default:
        t.kind = Tree::Kind::kNull;
    }
    return t;
  }

 private:
  std::string dotted() const {
    std::string key;
    for (const auto& p : path_) key += p;
    if (!key.empty() && key[0] == '.') key.erase(0, 1);
    return key;
  }

  // "<file>:<line>: <key>: msg" (the key left out when `with_key` is false or at the root).
  [[noreturn]] void fail(int line, const std::string& msg, bool with_key = true) const {
    const std::string key = with_key ? dotted() : "";
    throw ConfigError("config",
                      strcat(file_, line > 0 ? strcat(":", line) : "", ": ", key.empty() ? "" : key + ": ", msg));
  }

  const std::string& file_;
  size_t nodes_ = 0, bytes_ = 0;
  std::vector<std::string> path_;  // keys / [indices] from the root to the node being converted
};

void set_origin(Tree& t, const std::string& origin) {
  t.origin = origin;
  t.line = 0;
  for (auto& [k, v] : t.map) set_origin(v, origin);
  for (auto& v : t.seq) set_origin(v, origin);
}

// Splits "a.b[0].c" / "a.b.0.c" into {"a","b","0","c"}.
std::vector<std::string> split_path(const std::string& dotted) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : dotted) {
    if (c == '.' || c == '[') {
      if (!cur.empty()) parts.push_back(cur);
      cur.clear();
    } else if (c != ']') {
      cur += c;
    }
  }
  if (!cur.empty()) parts.push_back(cur);
  return parts;
}

bool parse_index(const std::string& s, size_t& out) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  out = std::stoul(s);
  return true;
}

struct Size {
  size_t nodes = 0, bytes = 0, depth = 0;  // depth: levels of mappings / lists below the node
};

Size size_of(const Tree& t) {
  Size s{1, t.scalar.size(), 0};
  auto add = [&](const Tree& c) {
    const Size cs = size_of(c);
    s.nodes += cs.nodes;
    s.bytes += cs.bytes;
    s.depth = std::max(s.depth, cs.depth + 1);
  };
  for (const auto& [k, v] : t.map) add(v);
  for (const auto& v : t.seq) add(v);
  return s;
}

// Resolves ${...} in place; a resolved target is not resolved again, so the work is linear in what the
// config expands to, which is held to kMaxConfigNodes values / kMaxConfigBytes of text (`${x0}${x0}`
// chains and mapping references copied into mappings grow exponentially), and references nest at most
// kMaxInterpolationDepth deep.
class Interpolator {
 public:
  Interpolator(Tree& root, const std::string& file) : root_(root), file_(file) {
    const Size s = size_of(root);
    nodes_ = s.nodes;
    bytes_ = s.bytes;
  }

  void visit(Tree& n, const std::string& path) {
    if (n.is_map()) {
      for (auto& [k, v] : n.map) visit(v, path.empty() ? k : path + "." + k);
    } else if (n.is_seq()) {
      for (size_t i = 0; i < n.seq.size(); ++i) visit(n.seq[i], strcat(path, "[", i, "]"));
    } else if (n.is_scalar() && n.scalar.find("${") != std::string::npos) {
      resolve(n, path);
    }
  }

 private:
  [[noreturn]] void fail(const Tree& n, const std::string& path, const std::string& msg) const {
    throw ConfigError("config", strcat(tree_location(n, file_), ": ", path, ": ", msg));
  }

  void check_budget(const Tree& n, const std::string& path) const {
    if (nodes_ > kMaxConfigNodes)
      fail(n, path,
           strcat("interpolation expands the config to more than ", kMaxConfigNodes,
                  " values (references copied into references?)"));
    if (bytes_ > kMaxConfigBytes)
      fail(n, path,
           strcat("interpolation expands the config to more than ", kMaxConfigBytes >> 20,
                  " MiB of text (references spliced into references?)"));
  }

  void resolve(Tree& n, const std::string& path) {
    if (std::find(stack_.begin(), stack_.end(), path) != stack_.end())
      fail(n, path, strcat("interpolation cycle through ", stack_.front()));
    if (stack_.size() >= kMaxInterpolationDepth)
      fail(n, path,
           strcat("interpolation nested more than ", kMaxInterpolationDepth, " references deep (through ",
                  stack_.front(), ")"));
    stack_.push_back(path);
    const std::string original = n.scalar;
    size_t from = 0;  // spliced values are not interpolated again
    for (;;) {
      const std::string text = n.scalar;
      const size_t open = text.find("${", from);
      if (open == std::string::npos) break;
      const size_t close = matching_brace(text, open);
      if (close == std::string::npos) fail(n, path, strcat("unterminated '${' in '", original, "'"));
      const bool whole = open == 0 && close == text.size() - 1;
      Tree value = evaluate(n, path, text.substr(open + 2, close - open - 2));
      if (whole) {
        const Size vs = size_of(value);
        nodes_ += vs.nodes - 1;
        bytes_ += vs.bytes;
        bytes_ -= std::min(bytes_, text.size());
        check_budget(n, path);
        if (split_path(path).size() + vs.depth > kMaxConfigDepth)
          fail(n, path, strcat("interpolation nests the config more than ", kMaxConfigDepth, " levels deep"));
        const int line = n.line;
        const std::string origin = n.origin;
        n = std::move(value);
        n.line = line;
        n.origin = origin;
        break;
      }
      if (!value.is_scalar() && !value.is_null())
        fail(n, path, strcat("'", original, "' splices a mapping or list into a string"));
      bytes_ += value.scalar.size();
      bytes_ -= std::min(bytes_, close + 1 - open);
      check_budget(n, path);
      n.scalar = text.substr(0, open) + value.scalar + text.substr(close + 1);
      n.quoted = true;
      from = open + value.scalar.size();
    }
    stack_.pop_back();
  }

  // The '}' closing the "${" at `open`, counting nested "${...}"; npos if none.
  static size_t matching_brace(const std::string& text, size_t open) {
    int depth = 0;
    for (size_t i = open; i < text.size(); ++i) {
      if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '{') {
        ++depth;
        ++i;
      } else if (text[i] == '}' && --depth == 0) {
        return i;
      }
    }
    return std::string::npos;
  }

  // Resolves the "${...}" nested inside an expression (`${oc.decode:${oc.env:N,1}}`) to their text.
  std::string expand_nested(const Tree& n, const std::string& path, const std::string& expr) {
    std::string out;
    size_t from = 0;
    for (size_t open; (open = expr.find("${", from)) != std::string::npos;) {
      const size_t close = matching_brace(expr, open);
      if (close == std::string::npos) fail(n, path, strcat("unterminated '${' in '${", expr, "}'"));
      const Tree v = evaluate(n, path, expr.substr(open + 2, close - open - 2));
      if (!v.is_scalar() && !v.is_null())
        fail(n, path, strcat("'${", expr, "}' splices a mapping or list into an expression"));
      out += expr.substr(from, open - from) + (v.is_null() ? std::string("null") : v.scalar);
      from = close + 1;
    }
    return out + expr.substr(from);
  }

  Tree evaluate(const Tree& n, const std::string& path, const std::string& raw) {
    Tree out;
    out.kind = Tree::Kind::kScalar;
    const std::string expr = raw.find("${") == std::string::npos ? raw : expand_nested(n, path, raw);
    if (expr.rfind("oc.decode:", 0) == 0) {
      // OmegaConf's oc.decode: the string parsed as a YAML value (number, bool, null, [list], {map}).
      std::string text = expr.substr(10);
      while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.erase(text.begin());
      while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.pop_back();
      if (text.size() >= 2 && (text.front() == '\'' || text.front() == '"') && text.back() == text.front())
        text = text.substr(1, text.size() - 2);
      try {
        out = tree_from_yaml(text, file_);
      } catch (const ConfigError&) {
        out.kind = Tree::Kind::kScalar;
        out.scalar = text;
        out.quoted = true;  // not a YAML value: the string itself, as OmegaConf keeps it
      }
      return out;
    }
    if (expr.rfind("oc.env:", 0) == 0) {
      std::string var = expr.substr(7), def;
      bool has_def = false;
      if (auto c = var.find(','); c != std::string::npos) {
        def = var.substr(c + 1);
        var = var.substr(0, c);
        has_def = true;
      }
      auto trim = [](std::string s) {
        while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.erase(s.begin());
        while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
        if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front())
          s = s.substr(1, s.size() - 2);
        return s;
      };
      var = trim(var);
      if (const char* v = std::getenv(var.c_str())) {
        out.scalar = v;
      } else if (has_def) {
        out.scalar = trim(def);
        if (out.scalar == "null") out.kind = Tree::Kind::kNull;
      } else {
        throw ConfigError("config", strcat(tree_location(n, file_), ": ", path, ": environment variable '", var,
                                           "' is not set and ${oc.env:", var, "} has no default"));
      }
      return out;
    }
    if (expr.find(':') != std::string::npos || expr.empty() || expr.front() == '.')
      throw ConfigError(
          "config", strcat(tree_location(n, file_), ": ", path, ": unsupported interpolation '${", expr,
                           "}' (supported: ${oc.env:VAR}, ${oc.env:VAR,default}, ${oc.decode:TEXT}, ${section.key})"));
    const Tree* target = tree_at(root_, expr);
    if (!target)
      throw ConfigError("config", strcat(tree_location(n, file_), ": ", path, ": interpolation '${", expr,
                                         "}' refers to a key that is not set in the config"));
    Tree& t = const_cast<Tree&>(*target);
    visit(t, expr);  // resolve the target first (cycle-checked)
    return t;
  }

  Tree& root_;
  const std::string& file_;
  std::vector<std::string> stack_;
  size_t nodes_ = 0, bytes_ = 0;  // what the tree holds now
};

}  // namespace

const Tree* Tree::find(const std::string& key) const {
  for (const auto& [k, v] : map)
    if (k == key) return &v;
  return nullptr;
}

Tree* Tree::find(const std::string& key) {
  for (auto& [k, v] : map)
    if (k == key) return &v;
  return nullptr;
}

Tree& Tree::get_or_add(const std::string& key) {
  if (kind == Kind::kNull) kind = Kind::kMap;
  if (Tree* t = find(key)) return *t;
  map.emplace_back(key, Tree{});
  return map.back().second;
}

void Tree::erase(const std::string& key) {
  map.erase(std::remove_if(map.begin(), map.end(), [&](const auto& kv) { return kv.first == key; }), map.end());
}

std::string Tree::short_repr() const {
  switch (kind) {
    case Kind::kScalar: return "'" + scalar + "'";
    case Kind::kMap: return "a mapping";
    case Kind::kSeq: return "a list";
    default: return "null";
  }
}

size_t tree_node_count(const Tree& t) {
  return size_of(t).nodes;
}

Tree tree_from_yaml(const std::string& text, const std::string& file) {
  try {
    Converter conv(file);
    return conv.convert(YAML::Load(text));
  } catch (const YAML::Exception& e) {
    throw ConfigError("config", strcat(file, ":", e.mark.line + 1, ": invalid YAML: ", e.msg));
  }
}

const Tree* tree_at(const Tree& root, const std::string& dotted) {
  const Tree* cur = &root;
  for (const auto& p : split_path(dotted)) {
    size_t idx = 0;
    if (cur->is_map()) {
      cur = cur->find(p);
    } else if (cur->is_seq() && parse_index(p, idx)) {
      cur = idx < cur->seq.size() ? &cur->seq[idx] : nullptr;
    } else {
      return nullptr;
    }
    if (!cur) return nullptr;
  }
  return cur;
}

void tree_put(Tree& root, const std::string& dotted, Tree value) {
  const auto parts = split_path(dotted);
  if (parts.empty()) throw ConfigError("config", strcat("--set '", dotted, "': empty key path"));
  Tree* cur = &root;
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    size_t idx = 0;
    Tree* next = nullptr;
    if (cur->is_seq()) {
      if (!parse_index(parts[i], idx) || idx >= cur->seq.size())
        throw ConfigError("config", strcat("--set ", dotted, ": '", parts[i], "' is not an index of the list (size ",
                                           cur->seq.size(), ")"));
      next = &cur->seq[idx];
    } else if (cur->is_map() || cur->is_null()) {
      next = &cur->get_or_add(parts[i]);
    } else {
      throw ConfigError("config", strcat("--set ", dotted, ": '", parts[i - 1], "' is a scalar, not a mapping"));
    }
    if (last) {
      *next = std::move(value);
      return;
    }
    cur = next;
  }
}

void tree_set(Tree& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("config", strcat("--set '", assignment, "': expected key.path=value"));
  const std::string key = assignment.substr(0, eq);
  Tree value = tree_from_yaml(assignment.substr(eq + 1), "--set " + assignment);
  set_origin(value, "--set " + assignment);
  tree_put(root, key, std::move(value));
}

void tree_interpolate(Tree& root, const std::string& file) {
  Interpolator in(root, file);
  in.visit(root, "");
}

std::string tree_location(const Tree& node, const std::string& file) {
  if (!node.origin.empty()) return node.origin;
  if (node.line > 0) return strcat(file, ":", node.line);
  return file;
}

std::string did_you_mean(const std::string& key, const std::vector<std::string>& candidates) {
  const std::string best = closest_name(key, candidates);
  return best.empty() ? std::string() : "did you mean '" + best + "'?";
}

}  // namespace trinity::config::detail
