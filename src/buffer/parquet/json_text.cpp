// JSON text primitives (see json_text.h).
#include "buffer/parquet/json_text.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <vector>

namespace trinity::buffer::parquet {

namespace {

constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHighs = 0x8080808080808080ULL;

// Non-zero if any byte of x needs attention: < 0x20, '"', '\\' or >= 0x80.
inline uint64_t special_bytes(uint64_t x) {
  const uint64_t lt20 = (x - kOnes * 0x20) & ~x;
  const uint64_t q = x ^ (kOnes * 0x22), bs = x ^ (kOnes * 0x5c);
  const uint64_t eq_q = (q - kOnes) & ~q, eq_bs = (bs - kOnes) & ~bs;
  return (lt20 | eq_q | eq_bs | x) & kHighs;
}

// Length of the valid UTF-8 sequence at p (2..4), or 0 if invalid.
inline size_t utf8_seq(const unsigned char* p, size_t n) {
  const unsigned char c = p[0];
  if (c >= 0xc2 && c <= 0xdf) return n >= 2 && (p[1] & 0xc0) == 0x80 ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (n < 3 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80) return 0;
    if (c == 0xe0 && p[1] < 0xa0) return 0;  // overlong
    if (c == 0xed && p[1] > 0x9f) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (n < 4 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 || (p[3] & 0xc0) != 0x80) return 0;
    if (c == 0xf0 && p[1] < 0x90) return 0;
    if (c == 0xf4 && p[1] > 0x8f) return 0;
    return 4;
  }
  return 0;
}

void put2(char* d, int v) {
  d[0] = static_cast<char>('0' + v / 10);
  d[1] = static_cast<char>('0' + v % 10);
}

// Howard Hinnant's civil_from_days.
void civil(int64_t z, int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
}

void write_ymd(std::string& out, int64_t days) {
  int64_t y;
  unsigned m, d;
  civil(days, y, m, d);
  char buf[32];
  char* e = buf;
  if (y < 0 || y > 9999) {
    e = std::to_chars(buf, buf + 20, y).ptr;
  } else {
    for (int i = 3, v = static_cast<int>(y); i >= 0; --i, v /= 10) buf[i] = static_cast<char>('0' + v % 10);
    e = buf + 4;
  }
  *e++ = '-';
  put2(e, static_cast<int>(m));
  e += 2;
  *e++ = '-';
  put2(e, static_cast<int>(d));
  e += 2;
  out.append(buf, static_cast<size_t>(e - buf));
}

void write_hms(std::string& out, int64_t secs, int64_t frac, int digits) {
  char buf[32];
  put2(buf, static_cast<int>(secs / 3600));
  buf[2] = ':';
  put2(buf + 3, static_cast<int>(secs / 60 % 60));
  buf[5] = ':';
  put2(buf + 6, static_cast<int>(secs % 60));
  size_t len = 8;
  if (frac != 0) {
    buf[len++] = '.';
    for (int i = digits - 1; i >= 0; --i, frac /= 10)
      buf[len + static_cast<size_t>(i)] = static_cast<char>('0' + frac % 10);
    len += static_cast<size_t>(digits);
  }
  out.append(buf, len);
}

int64_t pow10(int digits) {
  int64_t p = 1;
  for (int i = 0; i < digits; ++i) p *= 10;
  return p;
}

// Writes the decimal digits string `digits` (optionally negative) with `scale` digits after the point.
void place_point(std::string& out, bool neg, const std::string& digits, int32_t scale) {
  if (neg) out += '-';
  if (scale <= 0) {
    out += digits;
    if (digits != "0") out.append(static_cast<size_t>(-scale), '0');
    return;
  }
  const size_t s = static_cast<size_t>(scale);
  if (digits.size() <= s) {
    out += "0.";
    out.append(s - digits.size(), '0');
    out += digits;
  } else {
    out.append(digits, 0, digits.size() - s);
    out += '.';
    out.append(digits, digits.size() - s, s);
  }
}

}  // namespace

bool is_valid_utf8(const char* p, size_t n) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  size_t i = 0;
  while (i < n) {
    if (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, u + i, 8);
      if (!(w & kHighs)) {
        i += 8;
        continue;
      }
    }
    if (u[i] < 0x80) {
      ++i;
      continue;
    }
    const size_t k = utf8_seq(u + i, n - i);
    if (!k) return false;
    i += k;
  }
  return true;
}

void write_json_string(std::string& out, const char* p, size_t n) {
  static const char kHex[] = "0123456789abcdef";
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  out.reserve(out.size() + n + 2);
  out += '"';
  size_t i = 0, run = 0;  // [run, i) is copied verbatim later
  while (i < n) {
    if (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, u + i, 8);
      if (!special_bytes(w)) {
        i += 8;
        continue;
      }
    }
    const unsigned char c = u[i];
    if (c >= 0x80) {
      const size_t k = utf8_seq(u + i, n - i);
      if (k) {
        i += k;
        continue;
      }
      out.append(p + run, i - run);
      out += "\xEF\xBF\xBD";  // U+FFFD for an invalid byte
      run = ++i;
      continue;
    }
    if (c >= 0x20 && c != '"' && c != '\\') {
      ++i;
      continue;
    }
    out.append(p + run, i - run);
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
      default: {
        const char e[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out.append(e, 6);
      }
    }
    run = ++i;
  }
  out.append(p + run, n - run);
  out += '"';
}

void write_base64_string(std::string& out, const uint8_t* p, size_t n) {
  static const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  out += '"';
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    const uint32_t v = (uint32_t{p[i]} << 16) | (uint32_t{p[i + 1]} << 8) | p[i + 2];
    const char e[4] = {kB64[v >> 18], kB64[(v >> 12) & 63], kB64[(v >> 6) & 63], kB64[v & 63]};
    out.append(e, 4);
  }
  if (n - i == 1) {
    const uint32_t v = uint32_t{p[i]} << 16;
    const char e[4] = {kB64[v >> 18], kB64[(v >> 12) & 63], '=', '='};
    out.append(e, 4);
  } else if (n - i == 2) {
    const uint32_t v = (uint32_t{p[i]} << 16) | (uint32_t{p[i + 1]} << 8);
    const char e[4] = {kB64[v >> 18], kB64[(v >> 12) & 63], kB64[(v >> 6) & 63], '='};
    out.append(e, 4);
  }
  out += '"';
}

void write_int(std::string& out, int64_t v) {
  char buf[24];
  out.append(buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof(buf), v).ptr - buf));
}

void write_uint(std::string& out, uint64_t v) {
  char buf[24];
  out.append(buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof(buf), v).ptr - buf));
}

void write_double(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[32];
  out.append(buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof(buf), v).ptr - buf));
}

void write_float(std::string& out, float v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[32];
  out.append(buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof(buf), v).ptr - buf));
}

void write_date(std::string& out, int64_t days) {
  out += '"';
  write_ymd(out, days);
  out += '"';
}

void write_timestamp(std::string& out, int64_t units, int digits, bool utc) {
  const int64_t per_s = pow10(digits), per_day = 86400 * per_s;
  int64_t days = units / per_day, rem = units % per_day;
  if (rem < 0) {
    rem += per_day;
    --days;
  }
  out += '"';
  write_ymd(out, days);
  out += 'T';
  write_hms(out, rem / per_s, rem % per_s, digits);
  if (utc) out += 'Z';
  out += '"';
}

void write_time(std::string& out, int64_t units, int digits) {
  const int64_t per_s = pow10(digits);
  if (units < 0) units = 0;
  out += '"';
  write_hms(out, units / per_s, units % per_s, digits);
  out += '"';
}

void write_decimal(std::string& out, int64_t unscaled, int32_t scale) {
  const bool neg = unscaled < 0;
  const uint64_t mag = neg ? ~static_cast<uint64_t>(unscaled) + 1 : static_cast<uint64_t>(unscaled);
  char buf[24];
  const std::string digits(buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof(buf), mag).ptr - buf));
  place_point(out, neg, digits, scale);
}

void write_decimal_be(std::string& out, const uint8_t* p, size_t n, int32_t scale) {
  if (n == 0) {
    out += '0';
    return;
  }
  if (n <= 8) {
    uint64_t v = (p[0] & 0x80) ? ~uint64_t{0} : 0;  // sign-extend
    for (size_t i = 0; i < n; ++i) v = (v << 8) | p[i];
    write_decimal(out, static_cast<int64_t>(v), scale);
    return;
  }
  // Wide decimals: magnitude in base 2^8, repeated division by 10.
  const bool neg = p[0] & 0x80;
  std::vector<uint8_t> mag(p, p + n);
  if (neg) {  // two's complement negate
    for (auto& b : mag) b = static_cast<uint8_t>(~b);
    for (size_t i = n; i-- > 0;)
      if (++mag[i] != 0) break;
  }
  std::string digits;
  size_t start = 0;
  while (start < n) {
    uint32_t rem = 0;
    for (size_t i = start; i < n; ++i) {
      const uint32_t cur = (rem << 8) | mag[i];
      mag[i] = static_cast<uint8_t>(cur / 10);
      rem = cur % 10;
    }
    digits += static_cast<char>('0' + rem);
    while (start < n && mag[start] == 0) ++start;
  }
  if (digits.empty()) digits.push_back('0');
  std::string rev(digits.rbegin(), digits.rend());
  place_point(out, neg, rev, scale);
}

}  // namespace trinity::buffer::parquet
