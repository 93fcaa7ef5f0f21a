// jinja::Value (see jinja.h): construction, JSON in/out (Python json.dumps formatting, key order
// preserved), Python str()/repr() and equality.
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_limits.h"
#include "tokenizer/jinja.h"

namespace trinity::tok::jinja {

Value Value::none() {
  Value v;
  v.type_ = Type::None;
  return v;
}
Value::Value(bool b) : type_(Type::Bool), b_(b) {}
Value::Value(int64_t v) : type_(Type::Int), i_(v) {}
Value::Value(double v) : type_(Type::Float), f_(v) {}
Value::Value(std::string s) : type_(Type::String), s_(std::make_shared<std::string>(std::move(s))) {}
Value::Value(Array a) : type_(Type::List), a_(std::make_shared<Array>(std::move(a))) {}
Value::Value(Object o) : type_(Type::Dict), o_(std::make_shared<Object>(std::move(o))) {}
Value Value::function(Function f) {
  Value v;
  v.type_ = Type::Callable;
  v.fn_ = std::make_shared<Function>(std::move(f));
  return v;
}
Value Value::namespace_(Object o) {
  Value v(std::move(o));
  v.ns_ = true;
  return v;
}

const Value* Value::find(const std::string& key) const {
  if (type_ != Type::Dict) return nullptr;
  for (const auto& [k, v] : *o_)
    if (k == key) return &v;
  return nullptr;
}

void Value::set(const std::string& key, Value v) const {
  for (auto& [k, old] : *o_)
    if (k == key) {
      old = std::move(v);
      return;
    }
  o_->emplace_back(key, std::move(v));
}

bool Value::truthy() const {
  switch (type_) {
    case Type::Undefined:
    case Type::None: return false;
    case Type::Bool: return b_;
    case Type::Int: return i_ != 0;
    case Type::Float: return f_ != 0;
    case Type::String: return !s_->empty();
    case Type::List: return !a_->empty();
    case Type::Dict: return ns_ || !o_->empty();
    case Type::Callable: return true;
  }
  return false;
}

std::string Value::type_name() const {
  switch (type_) {
    case Type::Undefined: return "undefined";
    case Type::None: return "none";
    case Type::Bool: return "bool";
    case Type::Int: return "int";
    case Type::Float: return "float";
    case Type::String: return "string";
    case Type::List: return "list";
    case Type::Dict: return ns_ ? "namespace" : "dict";
    case Type::Callable: return "function";
  }
  return "?";
}

namespace {

// Python float repr: shortest round-trip digits; fixed notation for 1e-4 <= |x| < 1e16.
std::string py_float(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), x, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  const size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  const int exp = std::stoi(sci.substr(e + 1));
  bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out;
  if (exp >= -4 && exp < 16) {
    if (exp >= 0) {
      if (static_cast<int>(digits.size()) <= exp + 1) {
        out = digits + std::string(static_cast<size_t>(exp + 1) - digits.size(), '0') + ".0";
      } else {
        out = digits.substr(0, static_cast<size_t>(exp + 1)) + "." + digits.substr(static_cast<size_t>(exp + 1));
      }
    } else {
      out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof(eb), "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  }
  return neg ? "-" + out : out;
}

void json_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof(b), "\\u%04x", c);
          out += b;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void to_json_rec(const Value& v, std::string& out, int indent, int depth, bool sort_keys) {
  const std::string item_sep = indent >= 0 ? "," : ", ";
  auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * d), ' ');
  };
  switch (v.type()) {
    case Value::Type::Undefined:
    case Value::Type::None: out += "null"; break;
    case Value::Type::Bool: out += v.as_bool() ? "true" : "false"; break;
    case Value::Type::Int: out += std::to_string(v.as_int()); break;
    case Value::Type::Float: out += py_float(v.as_double()); break;
    case Value::Type::String: json_string(out, v.as_string()); break;
    case Value::Type::List: {
      const Array& a = v.array();
      if (a.empty()) {
        out += "[]";
        break;
      }
      out += '[';
      for (size_t i = 0; i < a.size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        to_json_rec(a[i], out, indent, depth + 1, sort_keys);
      }
      newline(depth);
      out += ']';
      break;
    }
    case Value::Type::Dict: {
      Object o = v.object();
      if (o.empty()) {
        out += "{}";
        break;
      }
      if (sort_keys) std::stable_sort(o.begin(), o.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      out += '{';
      for (size_t i = 0; i < o.size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        json_string(out, o[i].first);
        out += ": ";
        to_json_rec(o[i].second, out, indent, depth + 1, sort_keys);
      }
      newline(depth);
      out += '}';
      break;
    }
    case Value::Type::Callable: throw ValueError("chat_template", "tojson: cannot serialize a function");
  }
}

Value from_ordered(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: return Value(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Array a;
      a.reserve(j.size());
      for (const auto& e : j) a.push_back(from_ordered(e));
      return Value(std::move(a));
    }
    case nlohmann::ordered_json::value_t::object: {
      Object o;
      o.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) o.emplace_back(it.key(), from_ordered(it.value()));
      return Value(std::move(o));
    }
    default: return Value();
  }
}

std::string py_str_repr(const std::string& s) {
  const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    if (c == q || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else out += c;
  }
  return out + q;
}

}  // namespace

Value Value::from_json(const std::string& text) {
  check_json_depth(text, "JSON value", kMaxJsonDepth, "chat_template");
  try {
    return from_ordered(nlohmann::ordered_json::parse(text));
  } catch (const nlohmann::json::exception& e) {
    throw ValueError("chat_template", strcat("invalid JSON value: ", e.what()));
  }
}

std::string Value::to_json(int indent, bool sort_keys) const {
  std::string out;
  to_json_rec(*this, out, indent, 0, sort_keys);
  return out;
}

std::string Value::repr() const {
  switch (type_) {
    case Type::String: return py_str_repr(*s_);
    case Type::List: {
      std::string out = "[";
      for (size_t i = 0; i < a_->size(); ++i) out += (i ? ", " : "") + (*a_)[i].repr();
      return out + "]";
    }
    case Type::Dict: {
      std::string out = "{";
      for (size_t i = 0; i < o_->size(); ++i)
        out += (i ? ", " : "") + py_str_repr((*o_)[i].first) + ": " + (*o_)[i].second.repr();
      return out + "}";
    }
    default: return str();
  }
}

std::string Value::str() const {
  switch (type_) {
    case Type::Undefined: return "";
    case Type::None: return "None";
    case Type::Bool: return b_ ? "True" : "False";
    case Type::Int: return std::to_string(i_);
    case Type::Float: return py_float(f_);
    case Type::String: return *s_;
    case Type::List:
    case Type::Dict: return repr();
    case Type::Callable: return "<function>";
  }
  return "";
}

bool operator==(const Value& a, const Value& b) {
  using T = Value::Type;
  if (a.is_number() && b.is_number()) {
    if (a.type() == T::Int && b.type() == T::Int) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.type() == T::Bool && b.is_number()) return (a.as_bool() ? 1.0 : 0.0) == b.as_double();
  if (b.type() == T::Bool && a.is_number()) return (b.as_bool() ? 1.0 : 0.0) == a.as_double();
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case T::Undefined:
    case T::None: return true;
    case T::Bool: return a.as_bool() == b.as_bool();
    case T::String: return a.as_string() == b.as_string();
    case T::List: {
      if (a.array().size() != b.array().size()) return false;
      for (size_t i = 0; i < a.array().size(); ++i)
        if (!(a.array()[i] == b.array()[i])) return false;
      return true;
    }
    case T::Dict: {
      if (a.object().size() != b.object().size()) return false;
      for (const auto& [k, v] : a.object()) {
        const Value* o = b.find(k);
        if (!o || !(*o == v)) return false;
      }
      return true;
    }
    default: return false;
  }
}

}  // namespace trinity::tok::jinja
