// Python float repr and json.dumps (see py_json.h).
#include "workflow/rewards/py_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <vector>

namespace trinity::workflow::py {
namespace {

void append_u(std::string& out, unsigned v) {
  char b[8];
  std::snprintf(b, sizeof b, "\\u%04x", v & 0xFFFFu);
  out += b;
}

// json.dumps's ensure_ascii string encoder over UTF-8 input (invalid bytes pass through as U+FFFD).
void dump_string(std::string& out, const std::string& s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        default:
          if (c < 0x20 || c == 0x7F)
            append_u(out, c);
          else
            out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    const int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    unsigned cp = len == 4 ? c & 0x07u : len == 3 ? c & 0x0Fu : len == 2 ? c & 0x1Fu : 0xFFFDu;
    bool ok = len > 1 && i + static_cast<size_t>(len) <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      ok = (b & 0xC0u) == 0x80u;
      cp = (cp << 6) | (b & 0x3Fu);
    }
    if (!ok) {
      append_u(out, 0xFFFD);
      ++i;
      continue;
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      append_u(out, 0xD800 + (cp >> 10));
      append_u(out, 0xDC00 + (cp & 0x3FF));
    } else {
      append_u(out, cp);
    }
    i += static_cast<size_t>(len);
  }
  out += '"';
}

void dump(std::string& out, const nlohmann::ordered_json& v, bool sort_keys) {
  using T = nlohmann::ordered_json::value_t;
  switch (v.type()) {
    case T::null:
    case T::discarded:
      out += "null";
      break;
    case T::boolean:
      out += v.get<bool>() ? "true" : "false";
      break;
    case T::number_integer:
      out += std::to_string(v.get<int64_t>());
      break;
    case T::number_unsigned:
      out += std::to_string(v.get<uint64_t>());
      break;
    case T::number_float: {
      const double d = v.get<double>();
      out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : float_repr(d);
      break;
    }
    case T::string:
      dump_string(out, v.get_ref<const std::string&>());
      break;
    case T::array: {
      out += '[';
      bool first = true;
      for (const auto& x : v) {
        if (!first) out += ", ";
        first = false;
        dump(out, x, sort_keys);
      }
      out += ']';
      break;
    }
    case T::object: {
      std::vector<std::string> keys;
      for (auto it = v.begin(); it != v.end(); ++it) keys.push_back(it.key());
      if (sort_keys) std::sort(keys.begin(), keys.end());  // UTF-8 byte order = code point order
      out += '{';
      for (size_t i = 0; i < keys.size(); ++i) {
        if (i) out += ", ";
        dump_string(out, keys[i]);
        out += ": ";
        dump(out, v.at(keys[i]), sort_keys);
      }
      out += '}';
      break;
    }
    case T::binary:
      out += "null";
      break;
  }
}

}  // namespace

std::string float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  const std::string sci(buf, r.ptr);
  const size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  const int exp = std::stoi(sci.substr(e + 1));
  const bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out;
  if (exp >= -4 && exp < 16) {
    const auto ue = static_cast<size_t>(std::max(exp, 0));
    if (exp < 0) {
      out = "0.";
      out.append(static_cast<size_t>(-exp - 1), '0');
      out += digits;
    } else if (digits.size() <= ue + 1) {
      out = digits;
      out.append(ue + 1 - digits.size(), '0');
      out += ".0";
    } else {
      out = digits.substr(0, ue + 1);
      out += '.';
      out += digits.substr(ue + 1);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) {
      out += '.';
      out += digits.substr(1);
    }
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  }
  if (!neg) return out;
  std::string signed_out = "-";
  signed_out += out;
  return signed_out;
}

std::string json_dumps(const nlohmann::ordered_json& v, bool sort_keys) {
  std::string out;
  dump(out, v, sort_keys);
  return out;
}

}  // namespace trinity::workflow::py
