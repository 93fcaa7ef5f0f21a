// JSON-schema grammar compiler and byte-level pushdown matcher (see json_grammar.h).
#include "server/json_grammar.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "server/json_limits.h"
#include "server/protocol.h"

namespace trinity::server {

using json = nlohmann::ordered_json;

enum class Kind { kObject, kFreeObject, kArray, kString, kNumber, kInteger, kLiteral, kAlt, kRef, kSeq };

struct GrammarNode {
  Kind kind = Kind::kAlt;
  struct Prop {
    std::string key;  // with quotes: "\"name\""
    const GrammarNode* node = nullptr;
    bool required = false;
  };
  std::vector<Prop> props;               // kObject, in schema order
  std::vector<std::string> lits;         // kLiteral: compact JSON texts
  std::vector<const GrammarNode*> alts;  // kAlt; kSeq: the parts in order
  const GrammarNode* items = nullptr;    // kArray items, kFreeObject values
  const GrammarNode* key = nullptr;      // kFreeObject: the key string
  int64_t min_items = 0, max_items = -1;
  std::string ref;                      // kRef: "#/$defs/name"
  const GrammarNode* target = nullptr;  // kRef, resolved
};

JsonGrammar::~JsonGrammar() = default;

namespace {
constexpr size_t kMaxStack = 64;  // nesting of the output (the request body limit)
}

struct GrammarBuilder {
  JsonGrammar& g;
  const json* root = nullptr;
  std::string param;
  bool strict = false;
  std::map<std::string, GrammarNode*> defs;
  std::vector<GrammarNode*> refs;
  GrammarNode *any = nullptr, *str = nullptr;
  const GrammarNode* doc_root = nullptr;  // what "#" refers to

  GrammarNode* make(Kind k) {
    g.nodes_.push_back(std::make_unique<GrammarNode>());
    g.nodes_.back()->kind = k;
    return g.nodes_.back().get();
  }
  [[noreturn]] void bad(const std::string& at, const std::string& msg) const {
    throw ApiError(400, strcat(param, at.empty() ? "" : " at ", at, ": ", msg), param);
  }
  GrammarNode* literal(std::vector<std::string> l) {
    GrammarNode* n = make(Kind::kLiteral);
    n->lits = std::move(l);
    return n;
  }
  void build_any() {
    str = make(Kind::kString);
    any = make(Kind::kAlt);
    GrammarNode* obj = make(Kind::kFreeObject);
    obj->key = str;
    obj->items = any;
    GrammarNode* arr = make(Kind::kArray);
    arr->items = any;
    any->alts = {obj, arr, str, make(Kind::kNumber), literal({"true", "false", "null"})};
  }

  const GrammarNode* compile(const json& s, const std::string& at) {
    if (s.is_boolean()) {
      if (s.get<bool>()) return any;
      bad(at, "the schema 'false' matches nothing");
    }
    if (!s.is_object()) bad(at, "a schema must be an object");
    static const std::set<std::string> known = {"type",     "properties", "required",    "additionalProperties",
                                                "items",    "enum",       "const",       "anyOf",
                                                "$ref",     "$defs",      "definitions", "minItems",
                                                "maxItems", "title",      "description", "default",
                                                "examples", "$schema",    "$id",         "$comment",
                                                "minimum",  "maximum"};
    for (auto it = s.begin(); it != s.end(); ++it)
      if (!known.count(it.key()))
        bad(at, strcat("the JSON-schema keyword '", it.key(), "' is not supported by constrained decoding"));
    check_vacuous_bounds(s, at);
    if (auto r = s.find("$ref"); r != s.end()) {
      if (!r->is_string()) bad(at + "/$ref", "must be a string");
      const std::string ref = r->get<std::string>();
      if (ref.rfind("#/$defs/", 0) != 0 && ref.rfind("#/definitions/", 0) != 0 && ref != "#")
        bad(at + "/$ref",
            strcat("only local references (#, #/$defs/..., #/definitions/...) are supported, got '", ref, "'"));
      GrammarNode* n = make(Kind::kRef);
      n->ref = ref;
      refs.push_back(n);
      return n;
    }
    if (auto e = s.find("const"); e != s.end()) return literal({e->dump()});
    if (auto e = s.find("enum"); e != s.end()) {
      if (!e->is_array() || e->empty()) bad(at + "/enum", "must be a non-empty array");
      std::vector<std::string> l;
      for (const auto& v : *e) l.push_back(v.dump());
      return literal(std::move(l));
    }
    if (auto a = s.find("anyOf"); a != s.end()) {
      if (!a->is_array() || a->empty()) bad(at + "/anyOf", "must be a non-empty array");
      GrammarNode* n = make(Kind::kAlt);
      for (size_t i = 0; i < a->size(); ++i) n->alts.push_back(compile((*a)[i], strcat(at, "/anyOf/", i)));
      return n;
    }
    std::vector<std::string> types;
    if (auto t = s.find("type"); t != s.end()) {
      if (t->is_string())
        types.push_back(t->get<std::string>());
      else if (t->is_array())
        for (const auto& x : *t) {
          if (!x.is_string()) bad(at + "/type", "must be a string or an array of strings");
          types.push_back(x.get<std::string>());
        }
      else
        bad(at + "/type", "must be a string or an array of strings");
    } else if (s.contains("properties")) {
      types = {"object"};
    } else if (s.contains("items")) {
      types = {"array"};
    } else {
      return any;
    }
    GrammarNode* alt = types.size() > 1 ? make(Kind::kAlt) : nullptr;
    const GrammarNode* one = nullptr;
    for (const std::string& t : types) {
      one = compile_type(s, t, at);
      if (alt) alt->alts.push_back(one);
    }
    return alt ? alt : one;
  }

  // minimum / maximum are accepted only on integers and only when the 15-digit limit already implies
  // them (zod's .int() emits the safe-integer bounds +-9007199254740991); others would go unenforced.
  void check_vacuous_bounds(const json& s, const std::string& at) const {
    constexpr double kLargest = 999999999999999.0;  // kMaxDigits nines
    for (const char* k : {"minimum", "maximum"}) {
      auto b = s.find(k);
      if (b == s.end()) continue;
      const auto t = s.find("type");
      const bool integer = t != s.end() && t->is_string() && *t == "integer";
      const bool vacuous =
          b->is_number() && (k[1] == 'i' ? b->get<double>() <= -kLargest : b->get<double>() >= kLargest);
      if (!integer || !vacuous)
        bad(at, strcat("the JSON-schema keyword '", k, "' is not supported by constrained decoding (only on integers, ",
                       "as a bound the ", kMaxDigits, "-digit limit already implies, e.g. zod's safe-integer bounds)"));
    }
  }

  const GrammarNode* compile_type(const json& s, const std::string& t, const std::string& at) {
    if (t == "string") return str;
    if (t == "number") return make(Kind::kNumber);
    if (t == "integer") return make(Kind::kInteger);
    if (t == "boolean") return literal({"true", "false"});
    if (t == "null") return literal({"null"});
    if (t == "array") {
      GrammarNode* n = make(Kind::kArray);
      auto it = s.find("items");
      n->items = it == s.end() ? any : compile(*it, at + "/items");
      for (const char* k : {"minItems", "maxItems"})
        if (auto m = s.find(k); m != s.end()) {
          if (!m->is_number_unsigned()) bad(strcat(at, "/", k), "must be a non-negative integer");
          (k[1] == 'i' ? n->min_items : n->max_items) = m->get<int64_t>();
        }
      if (n->max_items >= 0 && n->min_items > n->max_items) bad(at, "minItems exceeds maxItems");
      return n;
    }
    if (t != "object") bad(at + "/type", strcat("unknown type '", t, "'"));
    const auto props = s.find("properties");
    const auto addl = s.find("additionalProperties");
    const bool closed = addl != s.end() && addl->is_boolean() && !addl->get<bool>();
    if (props == s.end() && !closed) {
      if (strict) bad(at, "strict mode needs \"additionalProperties\": false on every object");
      GrammarNode* n = make(Kind::kFreeObject);
      n->key = str;
      n->items = addl == s.end() || addl->is_boolean() ? any : compile(*addl, at + "/additionalProperties");
      return n;
    }
    if (strict && !closed) bad(at, "strict mode needs \"additionalProperties\": false on every object");
    GrammarNode* n = make(Kind::kObject);
    std::set<std::string> req;
    if (auto r = s.find("required"); r != s.end()) {
      if (!r->is_array()) bad(at + "/required", "must be an array of strings");
      for (const auto& x : *r) {
        if (!x.is_string()) bad(at + "/required", "must be an array of strings");
        req.insert(x.get<std::string>());
      }
    }
    if (props != s.end()) {
      if (!props->is_object()) bad(at + "/properties", "must be an object");
      for (auto it = props->begin(); it != props->end(); ++it) {
        GrammarNode::Prop p;
        p.key = json(it.key()).dump();
        p.required = req.erase(it.key()) > 0;
        if (strict && !p.required)
          bad(at + "/required", strcat("strict mode needs every property required; '", it.key(), "' is not"));
        p.node = compile(*it, at + "/properties/" + it.key());
        n->props.push_back(std::move(p));
      }
    }
    if (!req.empty()) bad(at + "/required", strcat("'", *req.begin(), "' is required but not in properties"));
    return n;
  }

  void resolve() {
    for (size_t i = 0; i < refs.size(); ++i) {  // compiling a def may add refs
      GrammarNode* r = refs[i];
      if (r->target) continue;
      if (r->ref == "#") {
        r->target = doc_root;
        continue;
      }
      auto [it, fresh] = defs.emplace(r->ref, nullptr);
      if (fresh) {
        const bool dollar = r->ref.rfind("#/$defs/", 0) == 0;
        const std::string name = r->ref.substr(dollar ? 8 : 14);
        const auto sec = root->find(dollar ? "$defs" : "definitions");
        if (sec == root->end() || !sec->is_object() || !sec->contains(name))
          bad(r->ref, "the reference points to nothing");
        GrammarNode* holder = make(Kind::kAlt);
        it->second = holder;
        holder->alts = {compile((*sec)[name], r->ref)};
      }
      r->target = it->second;
    }
  }
};

std::shared_ptr<const JsonGrammar> JsonGrammar::from_schema(std::string_view schema_json, const std::string& param) {
  return from_schema(schema_json, param, false);
}

std::shared_ptr<const JsonGrammar> JsonGrammar::from_schema(std::string_view schema_json, const std::string& param,
                                                            bool strict) {
  if (json_depth(schema_json) > kMaxRequestJsonDepth)
    throw ApiError(400, strcat(param, " nests deeper than ", kMaxRequestJsonDepth, " levels"), param);
  json s;
  try {
    s = json::parse(schema_json);
  } catch (const json::exception& e) {
    throw ApiError(400, strcat(param, " is not valid JSON: ", e.what()), param);
  }
  std::shared_ptr<JsonGrammar> g(new JsonGrammar());
  GrammarBuilder b{*g, &s, param, strict, {}, {}};
  b.build_any();
  g->root_ = b.compile(s, "");
  b.doc_root = g->root_;
  b.resolve();
  return g;
}

std::shared_ptr<const JsonGrammar> JsonGrammar::tool_call(const std::vector<std::pair<std::string, std::string>>& tools,
                                                          const std::string& param) {
  std::shared_ptr<JsonGrammar> g(new JsonGrammar());
  GrammarBuilder b{*g, nullptr, param, false, {}, {}};
  b.build_any();
  GrammarNode* alt = b.make(Kind::kAlt);
  for (const auto& [name, params] : tools) {
    if (json_depth(params) > kMaxRequestJsonDepth)
      throw ApiError(400, strcat(param, " nests deeper than ", kMaxRequestJsonDepth, " levels"), param);
    const json s = params.empty() ? json::object() : json::parse(params);
    b.root = &s;
    b.defs.clear();
    GrammarNode* call = b.make(Kind::kObject);
    const GrammarNode* args = s.empty() ? b.any : b.compile(s, name);
    b.doc_root = args;
    b.resolve();
    call->props = {{"\"name\"", b.literal({json(name).dump()}), true}, {"\"arguments\"", args, true}};
    GrammarNode* seq = b.make(Kind::kSeq);
    seq->alts = {b.literal({"<tool_call>\n"}), call, b.literal({"\n</tool_call>"})};
    alt->alts.push_back(seq);
  }
  g->root_ = alt;
  return g;
}

std::shared_ptr<const JsonGrammar> JsonGrammar::any_object() {
  std::shared_ptr<JsonGrammar> g(new JsonGrammar());
  GrammarBuilder b{*g, nullptr, "response_format", false, {}, {}};
  b.build_any();
  GrammarNode* obj = b.make(Kind::kFreeObject);
  obj->key = b.str;
  obj->items = b.any;
  g->root_ = obj;
  return g;
}

// ---- matcher ----

namespace {

using Frame = GrammarMatcher::Frame;
using Stack = GrammarMatcher::Stack;

bool is_digit(uint8_t c) {
  return c >= '0' && c <= '9';
}
bool is_hex(uint8_t c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool endable(const Frame& f) {
  if (f.node->kind == Kind::kSeq) return static_cast<size_t>(f.idx) == f.node->alts.size();
  if (f.node->kind == Kind::kNumber) return f.st == 2 || f.st == 3 || f.st == 5 || f.st == 8;
  if (f.node->kind == Kind::kInteger) return f.st == 2 || f.st == 3;
  return false;
}

// Pushes the frames that start `n` on top of `s` (alternatives branch).
void expand(const Stack& s, const GrammarNode* n, std::vector<Stack>& out, int hops = 0) {
  if (s.size() >= kMaxStack || hops > 32) return;
  switch (n->kind) {
    case Kind::kAlt:
      for (const GrammarNode* a : n->alts) expand(s, a, out, hops + 1);
      return;
    case Kind::kRef:
      expand(s, n->target, out, hops + 1);
      return;
    case Kind::kLiteral:
      for (size_t i = 0; i < n->lits.size(); ++i) {
        Stack t = s;
        t.push_back({n, 0, static_cast<int32_t>(i), 0});
        out.push_back(std::move(t));
      }
      return;
    default: {
      Stack t = s;
      t.push_back({n, 0, 0, 0});
      out.push_back(std::move(t));
    }
  }
}

void step(Stack s, uint8_t c, std::vector<Stack>& out);

// Starts child `n` (the parent's frame already updated) and feeds it c.
void start_child(const Stack& s, const GrammarNode* n, uint8_t c, std::vector<Stack>& out) {
  std::vector<Stack> starts;
  expand(s, n, starts);
  for (auto& t : starts) step(std::move(t), c, out);
}

bool required_between(const GrammarNode* n, int32_t from, int32_t to) {
  for (int32_t j = from; j < to; ++j)
    if (n->props[static_cast<size_t>(j)].required) return true;
  return false;
}

// Object key start at property index >= f.idx (those not skipping a required one).
void object_keys(const Stack& s, uint8_t c, std::vector<Stack>& out) {
  const Frame f = s.back();
  const auto n = static_cast<int32_t>(f.node->props.size());
  for (int32_t j = f.idx; j < n; ++j) {
    if (f.node->props[static_cast<size_t>(j)].key[0] == c) {
      Stack t = s;
      t.back() = {f.node, 2, j, 1};
      out.push_back(std::move(t));
    }
    if (f.node->props[static_cast<size_t>(j)].required) break;
  }
}

void step(Stack s, uint8_t c, std::vector<Stack>& out) {
  if (s.empty()) return;
  Frame& f = s.back();
  const GrammarNode* n = f.node;
  if (endable(f)) {  // the number may end here: the byte then belongs to the parent
    Stack p(s.begin(), s.end() - 1);
    step(std::move(p), c, out);
  }
  auto pop = [&] {
    s.pop_back();
    out.push_back(std::move(s));
  };
  auto keep = [&] { out.push_back(std::move(s)); };
  switch (n->kind) {
    case Kind::kLiteral: {
      const std::string& lit = n->lits[static_cast<size_t>(f.idx)];
      if (static_cast<size_t>(f.st) < lit.size() && static_cast<uint8_t>(lit[static_cast<size_t>(f.st)]) == c) {
        if (static_cast<size_t>(++f.st) == lit.size()) return pop();
        return keep();
      }
      return;
    }
    case Kind::kString:
      if (f.st == 0) {
        if (c == '"') f.st = 1, keep();
      } else if (f.st == 1) {
        if (c == '"') return pop();
        if (c == '\\')
          f.st = 2;
        else if (c < 0x20)
          return;
        keep();
      } else if (f.st == 2) {
        if (c == 'u')
          f.st = 3, f.aux = 0, keep();
        else if (std::string_view("\"\\/bfnrt").find(static_cast<char>(c)) != std::string_view::npos)
          f.st = 1, keep();
      } else if (is_hex(c)) {
        if (++f.aux == 4) f.st = 1;
        keep();
      }
      return;
    case Kind::kNumber:
    case Kind::kInteger: {
      const bool real = n->kind == Kind::kNumber;
      const bool d = is_digit(c);
      switch (f.st) {
        case 0:
          if (c == '-')
            f.st = 1, keep();
          else if (c == '0')
            f.st = 2, keep();
          else if (d)
            f.st = 3, f.aux = 1, keep();
          return;
        case 1:
          if (c == '0')
            f.st = 2, keep();
          else if (d)
            f.st = 3, f.aux = 1, keep();
          return;
        case 2:
        case 3:
          if (f.st == 3 && d && f.aux < kMaxDigits)
            ++f.aux, keep();
          else if (real && c == '.')
            f.st = 4, keep();
          else if (real && (c == 'e' || c == 'E'))
            f.st = 6, keep();
          return;
        case 4:
          if (d) f.st = 5, f.aux = 1, keep();
          return;
        case 5:
          if (d && f.aux < kMaxDigits)
            ++f.aux, keep();
          else if (c == 'e' || c == 'E')
            f.st = 6, keep();
          return;
        case 6:
          if (c == '+' || c == '-')
            f.st = 7, keep();
          else if (d)
            f.st = 8, f.aux = 1, keep();
          return;
        case 7:
          if (d) f.st = 8, f.aux = 1, keep();
          return;
        case 8:
          if (d && f.aux < 3) ++f.aux, keep();
          return;
      }
      return;
    }
    case Kind::kArray:
      if (f.st == 0) {
        if (c == '[') f.st = 1, keep();
      } else if (f.st == 1 || f.st == 3) {
        if (f.st == 1 && c == ']' && n->min_items == 0) return pop();
        if (f.st == 3 && c == ' ' && f.aux == 0) return f.aux = 1, keep();
        if (n->max_items >= 0 && f.idx >= n->max_items) return;
        f.st = 2, ++f.idx;
        start_child(s, n->items, c, out);
      } else if (f.st == 2) {
        if (c == ',' && (n->max_items < 0 || f.idx < n->max_items))
          f.st = 3, f.aux = 0, keep();
        else if (c == ']' && f.idx >= n->min_items)
          pop();
      }
      return;
    case Kind::kObject: {
      const auto np = static_cast<int32_t>(n->props.size());
      switch (f.st) {
        case 0:
          if (c == '{') f.st = 1, f.idx = 0, keep();
          return;
        case 1:
        case 6:
          if (f.st == 1 && c == '}' && !required_between(n, f.idx, np)) return pop();
          if (f.st == 6 && c == ' ' && f.aux == 0) return f.aux = 1, keep();
          return object_keys(s, c, out);
        case 2: {
          const std::string& key = n->props[static_cast<size_t>(f.idx)].key;
          if (static_cast<uint8_t>(key[static_cast<size_t>(f.aux)]) != c) return;
          if (static_cast<size_t>(++f.aux) == key.size()) f.st = 3;
          return keep();
        }
        case 3:
          if (c == ':') f.st = 4, f.aux = 0, keep();
          return;
        case 4: {
          if (c == ' ' && f.aux == 0) return f.aux = 1, keep();
          const GrammarNode* child = n->props[static_cast<size_t>(f.idx)].node;
          f.st = 5, ++f.idx;
          return start_child(s, child, c, out);
        }
        case 5:
          if (c == ',' && f.idx < np)
            f.st = 6, f.aux = 0, keep();
          else if (c == '}' && !required_between(n, f.idx, np))
            pop();
          return;
      }
      return;
    }
    case Kind::kSeq: {
      if (static_cast<size_t>(f.idx) >= n->alts.size()) return;
      const GrammarNode* part = n->alts[static_cast<size_t>(f.idx++)];
      return start_child(s, part, c, out);
    }
    case Kind::kFreeObject:
      switch (f.st) {
        case 0:
          if (c == '{') f.st = 1, keep();
          return;
        case 1:
        case 6:
          if (f.st == 1 && c == '}') return pop();
          if (f.st == 6 && c == ' ' && f.aux == 0) return f.aux = 1, keep();
          f.st = 3;
          return start_child(s, n->key, c, out);
        case 3:
          if (c == ':') f.st = 4, f.aux = 0, keep();
          return;
        case 4:
          if (c == ' ' && f.aux == 0) return f.aux = 1, keep();
          f.st = 5;
          return start_child(s, n->items, c, out);
        case 5:
          if (c == ',')
            f.st = 6, f.aux = 0, keep();
          else if (c == '}')
            pop();
          return;
      }
      return;
    default:
      return;
  }
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const JsonGrammar> g) : g_(std::move(g)) {
  expand({}, g_->root(), alts_);
}

bool GrammarMatcher::feed(uint8_t c) {
  std::vector<Stack> next;
  for (const Stack& s : alts_) step(s, c, next);
  if (next.empty()) return false;
  std::sort(next.begin(), next.end());
  next.erase(std::unique(next.begin(), next.end()), next.end());
  alts_ = std::move(next);
  return true;
}

bool GrammarMatcher::feed(std::string_view bytes) {
  GrammarMatcher copy = *this;
  for (char c : bytes)
    if (!copy.feed(static_cast<uint8_t>(c))) return false;
  *this = std::move(copy);
  return true;
}

bool GrammarMatcher::accepting() const {
  for (const Stack& s : alts_)
    if (s.empty() || (s.size() == 1 && endable(s.back()))) return true;
  return false;
}

bool GrammarMatcher::in_string_content() const {
  return !alts_.empty() && std::all_of(alts_.begin(), alts_.end(), [](const Stack& s) {
    return !s.empty() && s.back().node->kind == Kind::kString && s.back().st == 1;
  });
}

bool GrammarMatcher::finished() const {
  return std::all_of(alts_.begin(), alts_.end(), [](const Stack& s) { return s.empty(); });
}

}  // namespace trinity::server
