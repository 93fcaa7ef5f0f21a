// Jinja builtins (see jinja_builtins.h). Semantics are Python's / Jinja2's: str.strip(chars),
// str.split(sep, maxsplit), floor division and modulo, slicing with negative steps, `in` on
// strings/lists/dicts, tojson as json.dumps(ensure_ascii=False). Case mapping uses ICU.
#include "tokenizer/jinja_builtins.h"

#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <cmath>
#include <ctime>

#include "core/error.h"
#include "tokenizer/jinja_ast.h"

namespace trinity::tok::jinja {

namespace {

// Decodes one code point at s[i] (valid UTF-8 assumed; invalid bytes pass through as themselves).
uint32_t next_cp(const std::string& s, size_t& i) {
  const auto c = static_cast<unsigned char>(s[i]);
  int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  if (i + static_cast<size_t>(n) > s.size()) n = 1;
  uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1Fu) : n == 3 ? (c & 0x0Fu) : (c & 0x07u);
  for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + static_cast<size_t>(k)]) & 0x3Fu);
  i += static_cast<size_t>(n);
  return cp;
}

void put_cp(std::string& out, uint32_t cp) {
  icu::UnicodeString u(static_cast<UChar32>(cp));
  u.toUTF8String(out);
}

bool is_py_space(uint32_t cp) {
  return (cp >= 9 && cp <= 13) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

struct Cps {
  std::vector<uint32_t> cp;
  std::vector<size_t> off;  // byte offset of each code point, plus the end
};
Cps decode(const std::string& s) {
  Cps r;
  size_t i = 0;
  while (i < s.size()) {
    r.off.push_back(i);
    r.cp.push_back(next_cp(s, i));
  }
  r.off.push_back(s.size());
  return r;
}

// mode: 1 left, 2 right, 3 both. chars: undefined/none -> whitespace.
std::string py_strip(const std::string& s, const Value& chars, int mode) {
  const Cps c = decode(s);
  std::vector<uint32_t> set;
  const bool ws = chars.is_undefined() || chars.is_none();
  if (!ws) {
    if (!chars.is_string()) throw Fail{"strip() argument must be a string or None"};
    set = decode(chars.as_string()).cp;
  }
  auto strip_it = [&](uint32_t cp) { return ws ? is_py_space(cp) : std::find(set.begin(), set.end(), cp) != set.end(); };
  size_t b = 0, e = c.cp.size();
  if (mode & 1)
    while (b < e && strip_it(c.cp[b])) ++b;
  if (mode & 2)
    while (e > b && strip_it(c.cp[e - 1])) --e;
  return s.substr(c.off[b], c.off[e] - c.off[b]);
}

Array py_split(const std::string& s, const Value& sep, int64_t maxsplit) {
  Array out;
  if (sep.is_undefined() || sep.is_none()) {
    const Cps c = decode(s);
    size_t i = 0;
    const size_t n = c.cp.size();
    while (true) {
      while (i < n && is_py_space(c.cp[i])) ++i;
      if (i >= n) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
        size_t e = n;
        while (e > i && is_py_space(c.cp[e - 1])) --e;
        out.emplace_back(s.substr(c.off[i], c.off[e] - c.off[i]));
        break;
      }
      size_t j = i;
      while (j < n && !is_py_space(c.cp[j])) ++j;
      out.emplace_back(s.substr(c.off[i], c.off[j] - c.off[i]));
      i = j;
    }
    return out;
  }
  if (!sep.is_string()) throw Fail{"split() separator must be a string or None"};
  const std::string& d = sep.as_string();
  if (d.empty()) throw Fail{"split(): empty separator"};
  size_t pos = 0;
  while (true) {
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) break;
    const size_t f = s.find(d, pos);
    if (f == std::string::npos) break;
    out.emplace_back(s.substr(pos, f - pos));
    pos = f + d.size();
  }
  out.emplace_back(s.substr(pos));
  return out;
}

std::string case_map(const std::string& s, int how) {  // 0 upper, 1 lower
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(s);
  if (how == 0) u.toUpper();
  else u.toLower();
  std::string out;
  u.toUTF8String(out);
  return out;
}

std::string title_case(const std::string& s, bool only_first) {
  std::string out;
  size_t i = 0;
  bool prev_cased = false, first = true;
  while (i < s.size()) {
    const uint32_t cp = next_cp(s, i);
    const auto c = static_cast<UChar32>(cp);
    if (only_first) put_cp(out, static_cast<uint32_t>(first ? u_totitle(c) : u_tolower(c)));
    else put_cp(out, static_cast<uint32_t>(prev_cased ? u_tolower(c) : u_totitle(c)));
    prev_cased = u_hasBinaryProperty(c, UCHAR_CASED) || (u_hasBinaryProperty(c, UCHAR_CASE_IGNORABLE) && prev_cased);
    first = false;
  }
  return out;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  size_t pos = 0;
  int64_t n = 0;
  if (from.empty()) {  // Python inserts `to` between every character
    const Cps c = decode(s);
    for (size_t k = 0; k < c.cp.size(); ++k) {
      if (count < 0 || n < count) out += to, ++n;
      out += s.substr(c.off[k], c.off[k + 1] - c.off[k]);
    }
    if (count < 0 || n < count) out += to;
    return out;
  }
  while (count < 0 || n < count) {
    const size_t f = s.find(from, pos);
    if (f == std::string::npos) break;
    out.append(s, pos, f - pos);
    out += to;
    pos = f + from.size();
    ++n;
  }
  out.append(s, pos, std::string::npos);
  return out;
}

const Value& arg(const std::vector<Value>& a, size_t i, const Kwargs& kw, const char* name) {
  for (const auto& [k, v] : kw)
    if (k == name) return v;
  static const Value undef;
  return i < a.size() ? a[i] : undef;
}

int64_t to_int(const Value& v, const char* what) {
  if (v.type() == Value::Type::Int) return v.as_int();
  if (v.type() == Value::Type::Bool) return v.as_bool() ? 1 : 0;
  throw Fail{strcat(what, ": expected an integer, got a ", v.type_name())};
}

bool starts_or_ends(const std::string& s, const Value& p, bool start) {
  auto one = [&](const Value& x) {
    if (!x.is_string()) throw Fail{strcat(start ? "startswith" : "endswith", "() argument must be a string or a tuple of strings")};
    const std::string& t = x.as_string();
    if (t.size() > s.size()) return false;
    return start ? s.compare(0, t.size(), t) == 0 : s.compare(s.size() - t.size(), t.size(), t) == 0;
  };
  if (p.is_array()) {
    for (const auto& x : p.array())
      if (one(x)) return true;
    return false;
  }
  return one(p);
}

Value method(const Value& self, const std::string& name) {
  auto fn = [](auto f) { return Value::function(f); };
  if (self.is_string()) {
    const std::string s = self.as_string();
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
      const int mode = name == "strip" ? 3 : name == "lstrip" ? 1 : 2;
      return fn([s, mode](const std::vector<Value>& a, const Kwargs& kw) { return Value(py_strip(s, arg(a, 0, kw, "chars"), mode)); });
    }
    if (name == "split")
      return fn([s](const std::vector<Value>& a, const Kwargs& kw) {
        const Value& m = arg(a, 1, kw, "maxsplit");
        return Value(py_split(s, arg(a, 0, kw, "sep"), m.is_undefined() ? -1 : to_int(m, "split maxsplit")));
      });
    if (name == "startswith" || name == "endswith") {
      const bool st = name == "startswith";
      return fn([s, st](const std::vector<Value>& a, const Kwargs&) {
        if (a.empty()) throw Fail{"startswith()/endswith() need an argument"};
        return Value(starts_or_ends(s, a[0], st));
      });
    }
    if (name == "upper" || name == "lower")
      return fn([s, name](const std::vector<Value>&, const Kwargs&) { return Value(case_map(s, name == "upper" ? 0 : 1)); });
    if (name == "title" || name == "capitalize")
      return fn([s, name](const std::vector<Value>&, const Kwargs&) { return Value(title_case(s, name == "capitalize")); });
    if (name == "replace")
      return fn([s](const std::vector<Value>& a, const Kwargs& kw) {
        if (a.size() < 2 || !a[0].is_string() || !a[1].is_string()) throw Fail{"replace() needs two string arguments"};
        const Value& c = arg(a, 2, kw, "count");
        return Value(replace_all(s, a[0].as_string(), a[1].as_string(), c.is_undefined() ? -1 : to_int(c, "replace count")));
      });
    if (name == "find" || name == "count" || name == "rfind")
      return fn([s, name](const std::vector<Value>& a, const Kwargs&) {
        if (a.empty() || !a[0].is_string()) throw Fail{strcat(name, "() needs a string argument")};
        const std::string& t = a[0].as_string();
        if (name == "count") {
          if (t.empty()) return Value(static_cast<int64_t>(decode(s).cp.size() + 1));
          int64_t n = 0;
          for (size_t p = s.find(t); p != std::string::npos; p = s.find(t, p + t.size())) ++n;
          return Value(n);
        }
        const size_t p = name == "find" ? s.find(t) : s.rfind(t);
        return Value(p == std::string::npos ? int64_t{-1} : static_cast<int64_t>(decode(s.substr(0, p)).cp.size()));
      });
    if (name == "join")
      return fn([s](const std::vector<Value>& a, const Kwargs&) {
        if (a.empty() || !a[0].is_array()) throw Fail{"join() needs a list"};
        std::string out;
        for (size_t i = 0; i < a[0].array().size(); ++i) out += (i ? s : "") + a[0].array()[i].str();
        return Value(out);
      });
    if (name == "splitlines")
      return fn([s](const std::vector<Value>&, const Kwargs&) {
        Array out;
        size_t b = 0;
        for (size_t i = 0; i < s.size(); ++i)
          if (s[i] == '\n' || s[i] == '\r') {
            out.emplace_back(s.substr(b, i - b));
            if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
            b = i + 1;
          }
        if (b < s.size()) out.emplace_back(s.substr(b));
        return Value(std::move(out));
      });
    if (name == "isdigit" || name == "isalpha" || name == "isspace" || name == "isalnum")
      return fn([s, name](const std::vector<Value>&, const Kwargs&) {
        if (s.empty()) return Value(false);
        size_t i = 0;
        while (i < s.size()) {
          const auto c = static_cast<UChar32>(next_cp(s, i));
          const bool ok = name == "isdigit" ? u_isdigit(c) : name == "isalpha" ? u_isalpha(c)
                        : name == "isspace" ? is_py_space(static_cast<uint32_t>(c)) : (u_isalnum(c) != 0);
          if (!ok) return Value(false);
        }
        return Value(true);
      });
    return Value();
  }
  if (self.is_object() && !self.is_namespace()) {
    if (name == "items" || name == "keys" || name == "values")
      return fn([self, name](const std::vector<Value>&, const Kwargs&) {
        Array out;
        for (const auto& [k, v] : self.object()) {
          if (name == "items") out.emplace_back(Array{Value(k), v});
          else out.push_back(name == "keys" ? Value(k) : v);
        }
        return Value(std::move(out));
      });
    if (name == "get")
      return fn([self](const std::vector<Value>& a, const Kwargs&) {
        if (a.empty() || !a[0].is_string()) throw Fail{"get() needs a string key"};
        const Value* v = self.find(a[0].as_string());
        return v ? *v : (a.size() > 1 ? a[1] : Value::none());
      });
  }
  return Value();
}

double num(const Value& v, const std::string& op) {
  if (v.is_number()) return v.as_double();
  if (v.type() == Value::Type::Bool) return v.as_bool() ? 1 : 0;
  throw Fail{strcat("unsupported operand type for '", op, "': ", v.type_name())};
}

bool less(const Value& a, const Value& b, const std::string& op) {
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if ((a.is_number() || a.type() == Value::Type::Bool) && (b.is_number() || b.type() == Value::Type::Bool))
    return num(a, op) < num(b, op);
  throw Fail{strcat("'", op, "' not supported between ", a.type_name(), " and ", b.type_name())};
}

bool contains(const Value& container, const Value& item) {
  switch (container.type()) {
    case Value::Type::String:
      if (!item.is_string()) throw Fail{strcat("'in <string>' requires a string on the left, got a ", item.type_name())};
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Type::List:
      for (const auto& x : container.array())
        if (x == item) return true;
      return false;
    case Value::Type::Dict: return item.is_string() && container.find(item.as_string()) != nullptr;
    default: throw Fail{strcat("argument of type ", container.type_name(), " is not iterable (operator 'in')")};
  }
}

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&#34;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

Array as_list(const Value& v, const char* what) {
  switch (v.type()) {
    case Value::Type::List: return v.array();
    case Value::Type::String: return string_chars(v.as_string());
    case Value::Type::Dict: {
      Array out;
      for (const auto& [k, x] : v.object()) out.emplace_back(k);
      return out;
    }
    case Value::Type::Undefined: return {};
    default: throw Fail{strcat(what, ": expected a list, got a ", v.type_name())};
  }
}

Value attr_path(const Value& v, const Value& attribute) {
  if (attribute.type() == Value::Type::Int) return get_item(v, attribute);
  Value cur = v;
  for (const Value& part : py_split(attribute.str(), Value("."), -1)) cur = get_item(cur, part);
  return cur;
}

int cmp_values(const Value& a, const Value& b, bool case_sensitive) {
  if (a.is_string() && b.is_string() && !case_sensitive) {
    const std::string x = case_map(a.as_string(), 1), y = case_map(b.as_string(), 1);
    return x < y ? -1 : y < x ? 1 : 0;
  }
  return less(a, b, "sort") ? -1 : less(b, a, "sort") ? 1 : 0;
}

}  // namespace

Array string_chars(const std::string& s) {
  Array out;
  const Cps c = decode(s);
  for (size_t k = 0; k < c.cp.size(); ++k) out.emplace_back(s.substr(c.off[k], c.off[k + 1] - c.off[k]));
  return out;
}

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) throw Fail{strcat("cannot read attribute '", name, "' of an undefined value")};
  if (obj.is_object()) {
    if (const Value* v = obj.find(name)) return *v;
  }
  if (obj.is_array() && !name.empty() && std::isdigit(static_cast<unsigned char>(name[0])))
    return get_item(obj, Value(static_cast<int64_t>(std::stoll(name))));
  return method(obj, name);
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) throw Fail{strcat("cannot index an undefined value with ", key.repr())};
  if (obj.is_object()) {
    if (!key.is_string()) return Value();
    if (const Value* v = obj.find(key.as_string())) return *v;
    return method(obj, key.as_string());
  }
  if ((obj.is_array() || obj.is_string()) && (key.type() == Value::Type::Int || key.type() == Value::Type::Bool)) {
    const Array chars = obj.is_string() ? string_chars(obj.as_string()) : Array{};
    const Array& a = obj.is_array() ? obj.array() : chars;
    int64_t i = to_int(key, "index");
    const auto n = static_cast<int64_t>(a.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value();
    return a[static_cast<size_t>(i)];
  }
  if (obj.is_string() && key.is_string()) return method(obj, key.as_string());
  return Value();
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (!obj.is_array() && !obj.is_string())
    throw Fail{strcat("cannot slice a ", obj.type_name())};
  const Array a = obj.is_array() ? obj.array() : string_chars(obj.as_string());
  const auto n = static_cast<int64_t>(a.size());
  const int64_t st = step.is_undefined() || step.is_none() ? 1 : to_int(step, "slice step");
  if (st == 0) throw Fail{"slice step cannot be zero"};
  auto norm = [&](const Value& v, int64_t def, bool is_start) {
    if (v.is_undefined() || v.is_none()) return def;
    int64_t x = to_int(v, "slice bound");
    if (x < 0) x += n;
    if (st > 0) return std::clamp<int64_t>(x, 0, n);
    (void)is_start;
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  const int64_t b = norm(start, st > 0 ? 0 : n - 1, true);
  const int64_t e = norm(stop, st > 0 ? n : -1, false);
  Array out;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) out.push_back(a[static_cast<size_t>(i)]);
  if (obj.is_array()) return Value(std::move(out));
  std::string s;
  for (const auto& c : out) s += c.as_string();
  return Value(s);
}

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  using T = Value::Type;
  if (op == "==") return Value(a == b);
  if (op == "!=") return Value(!(a == b));
  if (op == "<") return Value(less(a, b, op));
  if (op == ">") return Value(less(b, a, op));
  if (op == "<=") return Value(!less(b, a, op));
  if (op == ">=") return Value(!less(a, b, op));
  if (op == "in") return Value(contains(b, a));
  if (op == "not in") return Value(!contains(b, a));
  if (op == "~") return Value(a.str() + b.str());
  const bool ints = (a.type() == T::Int || a.type() == T::Bool) && (b.type() == T::Int || b.type() == T::Bool);
  if (op == "+") {
    if (a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
    if (a.is_array() && b.is_array()) {
      Array r = a.array();
      r.insert(r.end(), b.array().begin(), b.array().end());
      return Value(std::move(r));
    }
    if (ints) return Value(to_int(a, "+") + to_int(b, "+"));
    if ((a.is_number() || a.type() == T::Bool) && (b.is_number() || b.type() == T::Bool)) return Value(num(a, op) + num(b, op));
    throw Fail{strcat("cannot add a ", a.type_name(), " and a ", b.type_name())};
  }
  if (op == "*") {
    if ((a.is_string() || a.is_array()) && b.type() == T::Int) {
      const int64_t unit = static_cast<int64_t>(a.is_string() ? a.as_string().size() : a.array().size());
      if (b.as_int() > 0 && unit > 0 && b.as_int() > kMaxValueItems / unit)
        throw Fail{strcat("'*' would build a ", a.type_name(), " of ", unit, " x ", b.as_int(),
                          " items (more than the limit of ", kMaxValueItems, ")")};
      if (a.is_string()) {
        std::string r;
        for (int64_t i = 0; i < b.as_int(); ++i) r += a.as_string();
        return Value(r);
      }
      Array r;
      for (int64_t i = 0; i < b.as_int(); ++i) r.insert(r.end(), a.array().begin(), a.array().end());
      return Value(std::move(r));
    }
    if (ints) return Value(to_int(a, "*") * to_int(b, "*"));
    return Value(num(a, op) * num(b, op));
  }
  if (op == "-") {
    if (ints) return Value(to_int(a, "-") - to_int(b, "-"));
    return Value(num(a, op) - num(b, op));
  }
  if (op == "/") {
    const double d = num(b, op);
    if (d == 0) throw Fail{"division by zero"};
    return Value(num(a, op) / d);
  }
  if (op == "//" || op == "%") {
    if (ints) {
      const int64_t x = to_int(a, op.c_str()), y = to_int(b, op.c_str());
      if (y == 0) throw Fail{"integer division or modulo by zero"};
      int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) --q, r += y;
      return Value(op == "//" ? q : r);
    }
    if (a.is_string()) throw Fail{"'%' string formatting is not supported; use ~ or format filters"};
    const double x = num(a, op), y = num(b, op);
    if (y == 0) throw Fail{"float division or modulo by zero"};
    const double q = std::floor(x / y);
    return Value(op == "//" ? q : x - q * y);
  }
  if (op == "**") {
    if (ints && to_int(b, "**") >= 0) {
      int64_t r = 1, base = to_int(a, "**");
      for (int64_t e = to_int(b, "**"); e > 0; --e) r *= base;
      return Value(r);
    }
    return Value(std::pow(num(a, op), num(b, op)));
  }
  throw Fail{strcat("unknown operator '", op, "'")};
}

namespace {
const char* kFilters[] = {"abs", "capitalize", "count", "d", "default", "dictsort", "e", "escape", "first",
                          "float", "indent", "int", "items", "join", "last", "length", "list", "lower", "map",
                          "max", "min", "replace", "reject", "rejectattr", "reverse", "round", "safe", "select",
                          "selectattr", "sort", "string", "sum", "title", "tojson", "trim", "unique", "upper",
                          "wordcount"};
const char* kTests[] = {"boolean", "callable", "defined", "divisibleby", "eq", "equalto", "even", "false",
                        "float", "ge", "gt", "in", "integer", "iterable", "le", "lower", "lt", "mapping", "ne",
                        "none", "number", "odd", "sameas", "sequence", "string", "true", "undefined", "upper"};
}  // namespace

bool is_known_filter(const std::string& n) {
  return std::find(std::begin(kFilters), std::end(kFilters), n) != std::end(kFilters);
}
bool is_known_test(const std::string& n) { return std::find(std::begin(kTests), std::end(kTests), n) != std::end(kTests); }

bool apply_test(const std::string& t, const std::vector<Value>& a) {
  using T = Value::Type;
  const Value& v = a[0];
  auto need = [&](size_t n) {
    if (a.size() < n + 1) throw Fail{strcat("test '", t, "' needs ", n, " argument(s)")};
    return a[1];
  };
  if (t == "defined") return !v.is_undefined();
  if (t == "undefined") return v.is_undefined();
  if (t == "none") return v.is_none();
  if (t == "boolean") return v.type() == T::Bool;
  if (t == "false") return v.type() == T::Bool && !v.as_bool();
  if (t == "true") return v.type() == T::Bool && v.as_bool();
  if (t == "integer") return v.type() == T::Int;
  if (t == "float") return v.type() == T::Float;
  if (t == "number") return v.is_number();
  if (t == "string") return v.is_string();
  if (t == "mapping") return v.is_object();
  if (t == "iterable" || t == "sequence") return v.is_array() || v.is_object() || v.is_string();
  if (t == "callable") return v.type() == T::Callable;
  if (t == "equalto" || t == "eq" || t == "sameas") return v == need(1);
  if (t == "ne") return !(v == need(1));
  if (t == "lt") return less(v, need(1), "<");
  if (t == "gt") return less(need(1), v, ">");
  if (t == "le") return !less(need(1), v, "<=");
  if (t == "ge") return !less(v, need(1), ">=");
  if (t == "in") return contains(need(1), v);
  if (t == "odd") return to_int(v, "odd") % 2 != 0;
  if (t == "even") return to_int(v, "even") % 2 == 0;
  if (t == "divisibleby") {
    const int64_t d = to_int(need(1), "divisibleby");
    return d != 0 && to_int(v, "divisibleby") % d == 0;
  }
  if (t == "lower") return v.is_string() && case_map(v.as_string(), 1) == v.as_string();
  if (t == "upper") return v.is_string() && case_map(v.as_string(), 0) == v.as_string();
  throw Fail{strcat("unknown test '", t, "'")};
}

Value apply_filter(const std::string& f, std::vector<Value>& a, const Kwargs& kw) {
  using T = Value::Type;
  const Value v = a[0];
  auto p = [&](size_t i, const char* name) -> const Value& { return arg(a, i, kw, name); };
  if (f == "length" || f == "count") {
    if (v.is_string()) return Value(static_cast<int64_t>(decode(v.as_string()).cp.size()));
    if (v.is_array()) return Value(static_cast<int64_t>(v.array().size()));
    if (v.is_object()) return Value(static_cast<int64_t>(v.object().size()));
    if (v.is_undefined()) return Value(int64_t{0});
    throw Fail{strcat("object of type ", v.type_name(), " has no length")};
  }
  if (f == "default" || f == "d") {
    const bool boolean = p(2, "boolean").truthy();
    if (v.is_undefined() || (boolean && !v.truthy())) {
      const Value& d = p(1, "default_value");
      return d.is_undefined() ? Value(std::string()) : d;
    }
    return v;
  }
  if (f == "tojson") {
    const Value& ind = p(1, "indent");
    const int indent = ind.is_undefined() || ind.is_none() ? -1 : static_cast<int>(to_int(ind, "tojson indent"));
    return Value(v.to_json(indent, p(2, "sort_keys").truthy()));
  }
  if (f == "trim") {
    if (!v.is_string()) throw Fail{strcat("trim: expected a string, got a ", v.type_name())};
    return Value(py_strip(v.as_string(), p(1, "chars"), 3));
  }
  if (f == "items") {
    if (v.is_undefined()) return Value(Array{});
    if (!v.is_object()) throw Fail{strcat("items: expected a mapping, got a ", v.type_name())};
    Array out;
    for (const auto& [k, x] : v.object()) out.emplace_back(Array{Value(k), x});
    return Value(std::move(out));
  }
  if (f == "dictsort") {
    if (!v.is_object()) throw Fail{strcat("dictsort: expected a mapping, got a ", v.type_name())};
    Object o = v.object();
    std::stable_sort(o.begin(), o.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    Array out;
    for (const auto& [k, x] : o) out.emplace_back(Array{Value(k), x});
    return Value(std::move(out));
  }
  if (f == "upper" || f == "lower") return Value(case_map(v.str(), f == "upper" ? 0 : 1));
  if (f == "title" || f == "capitalize") return Value(title_case(v.str(), f == "capitalize"));
  if (f == "string") return Value(v.str());
  if (f == "safe") return v;
  if (f == "e" || f == "escape") return Value(html_escape(v.str()));
  if (f == "replace") {
    if (a.size() < 3) throw Fail{"replace needs (old, new)"};
    const Value& c = p(3, "count");
    return Value(replace_all(v.str(), a[1].str(), a[2].str(), c.is_undefined() || c.is_none() ? -1 : to_int(c, "count")));
  }
  if (f == "join") {
    const Value& sep = p(1, "d");
    const Value& attribute = p(2, "attribute");
    std::string out;
    const Array items = as_list(v, "join");
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += sep.is_undefined() ? "" : sep.str();
      out += (attribute.is_undefined() ? items[i] : attr_path(items[i], attribute)).str();
    }
    return Value(out);
  }
  if (f == "first" || f == "last") {
    const Array items = as_list(v, f.c_str());
    if (items.empty()) return Value();
    return f == "first" ? items.front() : items.back();
  }
  if (f == "list") return Value(as_list(v, "list"));
  if (f == "reverse") {
    if (v.is_string()) {
      Array c = string_chars(v.as_string());
      std::string out;
      for (auto it = c.rbegin(); it != c.rend(); ++it) out += it->as_string();
      return Value(out);
    }
    Array items = as_list(v, "reverse");
    std::reverse(items.begin(), items.end());
    return Value(std::move(items));
  }
  if (f == "unique") {
    Array out;
    for (const auto& x : as_list(v, "unique"))
      if (std::none_of(out.begin(), out.end(), [&](const Value& y) { return y == x; })) out.push_back(x);
    return Value(std::move(out));
  }
  if (f == "sort") {
    Array items = as_list(v, "sort");
    const bool rev = p(1, "reverse").truthy(), cs = p(2, "case_sensitive").truthy();
    const Value& attribute = p(3, "attribute");
    std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
      const Value kx = attribute.is_undefined() ? x : attr_path(x, attribute);
      const Value ky = attribute.is_undefined() ? y : attr_path(y, attribute);
      const int c = cmp_values(kx, ky, cs);
      return rev ? c > 0 : c < 0;
    });
    return Value(std::move(items));
  }
  if (f == "min" || f == "max") {
    const Array items = as_list(v, f.c_str());
    if (items.empty()) return Value();
    Value best = items[0];
    for (const auto& x : items)
      if (f == "min" ? cmp_values(x, best, false) < 0 : cmp_values(x, best, false) > 0) best = x;
    return best;
  }
  if (f == "sum") {
    const Value& attribute = p(1, "attribute");
    Value acc = p(2, "start").is_undefined() ? Value(int64_t{0}) : p(2, "start");
    for (const auto& x : as_list(v, "sum")) acc = binary_op("+", acc, attribute.is_undefined() ? x : attr_path(x, attribute));
    return acc;
  }
  if (f == "abs") {
    if (v.type() == T::Int) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    return Value(std::fabs(num(v, "abs")));
  }
  if (f == "int") {
    if (v.type() == T::Int) return v;
    if (v.type() == T::Float) return Value(static_cast<int64_t>(v.as_double()));
    if (v.is_string()) {
      try {
        size_t used = 0;
        const std::string s = py_strip(v.as_string(), Value(), 3);
        const int64_t r = std::stoll(s, &used);
        if (used == s.size()) return Value(r);
      } catch (const std::exception&) {
      }
    }
    const Value& d = p(1, "default");
    return d.is_undefined() ? Value(int64_t{0}) : d;
  }
  if (f == "float") {
    if (v.is_number()) return Value(v.as_double());
    if (v.is_string()) {
      try {
        return Value(std::stod(v.as_string()));
      } catch (const std::exception&) {
      }
    }
    const Value& d = p(1, "default");
    return d.is_undefined() ? Value(0.0) : d;
  }
  if (f == "round") {
    const Value& pr = p(1, "precision");
    const int64_t prec = pr.is_undefined() ? 0 : to_int(pr, "round precision");
    const std::string method_name = p(2, "method").is_undefined() ? "common" : p(2, "method").str();
    const double scale = std::pow(10.0, static_cast<double>(prec));
    const double x = num(v, "round") * scale;
    const double r = method_name == "ceil" ? std::ceil(x) : method_name == "floor" ? std::floor(x) : std::round(x);
    return Value(r / scale);
  }
  if (f == "indent") {
    const Value& w = p(1, "width");
    const std::string pad = w.is_string() ? w.as_string() : std::string(static_cast<size_t>(w.is_undefined() ? 4 : to_int(w, "indent width")), ' ');
    const bool first = p(2, "first").truthy(), blank = p(3, "blank").truthy();
    const std::string s = v.str();
    std::string out;
    size_t b = 0;
    bool is_first = true;
    while (b <= s.size()) {
      size_t e = s.find('\n', b);
      const bool last = e == std::string::npos;
      if (last) e = s.size();
      const std::string line = s.substr(b, e - b);
      if ((is_first ? first : true) && (blank || !line.empty()) && !(is_first && !first)) out += pad;
      out += line;
      if (!last) out += '\n';
      is_first = false;
      if (last) break;
      b = e + 1;
    }
    return Value(out);
  }
  if (f == "wordcount") return Value(static_cast<int64_t>(py_split(v.str(), Value(), -1).size()));
  if (f == "map") {
    const Value& attribute = p(99, "attribute");
    Array out;
    for (const auto& x : as_list(v, "map")) {
      if (!attribute.is_undefined()) {
        Value r = attr_path(x, attribute);
        if (r.is_undefined()) {
          const Value& d = p(99, "default");
          if (!d.is_undefined()) r = d;
        }
        out.push_back(r);
      } else {
        if (a.size() < 2 || !a[1].is_string()) throw Fail{"map needs a filter name or attribute="};
        std::vector<Value> sub{x};
        sub.insert(sub.end(), a.begin() + 2, a.end());
        if (!is_known_filter(a[1].as_string())) throw Fail{strcat("map: unknown filter '", a[1].as_string(), "'")};
        out.push_back(apply_filter(a[1].as_string(), sub, {}));
      }
    }
    return Value(std::move(out));
  }
  if (f == "select" || f == "reject" || f == "selectattr" || f == "rejectattr") {
    const bool by_attr = f == "selectattr" || f == "rejectattr";
    const bool keep_if = f == "select" || f == "selectattr";
    size_t k = 1;
    Value attribute;
    if (by_attr) {
      if (a.size() < 2) throw Fail{strcat(f, " needs an attribute name")};
      attribute = a[k++];
    }
    std::string test = k < a.size() ? a[k++].str() : "";
    if (!test.empty() && !is_known_test(test)) throw Fail{strcat(f, ": unknown test '", test, "'")};
    Array out;
    for (const auto& x : as_list(v, f.c_str())) {
      const Value subject = by_attr ? attr_path(x, attribute) : x;
      bool r;
      if (test.empty()) {
        r = subject.truthy();
      } else {
        std::vector<Value> targs{subject};
        targs.insert(targs.end(), a.begin() + static_cast<long>(k), a.end());
        r = apply_test(test, targs);
      }
      if (r == keep_if) out.push_back(x);
    }
    return Value(std::move(out));
  }
  throw Fail{strcat("unknown filter '", f, "'")};
}

std::unordered_map<std::string, Value> builtin_globals() {
  std::unordered_map<std::string, Value> g;
  g["raise_exception"] = Value::function([](const std::vector<Value>& a, const Kwargs&) -> Value {
    throw Fail{strcat("raise_exception: ", a.empty() ? std::string("(no message)") : a[0].str())};
  });
  g["namespace"] = Value::function([](const std::vector<Value>& a, const Kwargs& kw) {
    Object o;
    if (!a.empty() && a[0].is_object()) o = a[0].object();
    for (const auto& [k, v] : kw) o.emplace_back(k, v);
    return Value::namespace_(std::move(o));
  });
  g["dict"] = Value::function([](const std::vector<Value>& a, const Kwargs& kw) {
    Value o{Object{}};
    if (!a.empty() && a[0].is_object())
      for (const auto& [k, v] : a[0].object()) o.set(k, v);
    for (const auto& [k, v] : kw) o.set(k, v);
    return o;
  });
  g["range"] = Value::function([](const std::vector<Value>& a, const Kwargs&) {
    int64_t start = 0, stop = 0, step = 1;
    if (a.size() == 1) stop = to_int(a[0], "range");
    else if (a.size() >= 2) start = to_int(a[0], "range"), stop = to_int(a[1], "range");
    if (a.size() >= 3) step = to_int(a[2], "range");
    if (a.empty() || step == 0) throw Fail{"range() needs 1-3 integer arguments and a non-zero step"};
    const long double count = (static_cast<long double>(stop) - start) / step;
    if (count > kMaxValueItems)
      throw Fail{strcat("range() of ", static_cast<double>(count), " items is over the limit of ", kMaxValueItems)};
    Array out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.emplace_back(i);
    return Value(std::move(out));
  });
  g["strftime_now"] = Value::function([](const std::vector<Value>& a, const Kwargs&) {
    if (a.empty() || !a[0].is_string()) throw Fail{"strftime_now() needs a format string"};
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char buf[256];
    const size_t n = std::strftime(buf, sizeof(buf), a[0].as_string().c_str(), &tm);
    return Value(std::string(buf, n));
  });
  return g;
}

}  // namespace trinity::tok::jinja
