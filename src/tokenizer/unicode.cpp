// Unicode helpers (see unicode.h). NFC uses ICU's Normalizer2 (the same data Node's
// String.prototype.normalize uses); everything else is plain UTF-8 arithmetic.
#include "tokenizer/unicode.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>

#include "core/error.h"

namespace trinity::tok::uni {

int utf8_len(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}

namespace {
// Valid range for the second byte given the lead byte (Unicode Table 3-7).
bool second_ok(unsigned char lead, unsigned char b) {
  if (lead == 0xE0) return b >= 0xA0 && b <= 0xBF;
  if (lead == 0xED) return b >= 0x80 && b <= 0x9F;
  if (lead == 0xF0) return b >= 0x90 && b <= 0xBF;
  if (lead == 0xF4) return b >= 0x80 && b <= 0x8F;
  return b >= 0x80 && b <= 0xBF;
}
bool cont(unsigned char b) { return (b & 0xC0) == 0x80; }

// Length of the valid sequence at s[i], or -(length of the maximal invalid subpart) when invalid,
// or 0 when the sequence is a valid but truncated prefix at end of input.
int scan(std::string_view s, size_t i) {
  const auto lead = static_cast<unsigned char>(s[i]);
  const int n = utf8_len(lead);
  if (n == 0) return -1;
  if (n == 1) return 1;
  for (int k = 1; k < n; ++k) {
    if (i + k >= s.size()) return 0;
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (k == 1 ? !second_ok(lead, b) : !cont(b)) return -k;
  }
  return n;
}
}  // namespace

size_t find_invalid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) { ++i; continue; }
    const int r = scan(s, i);
    if (r <= 0) return i;
    i += static_cast<size_t>(r);
  }
  return std::string_view::npos;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string lossy_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) { out += s[i++]; continue; }
    int r = scan(s, i);
    if (r > 0) {
      out.append(s.substr(i, static_cast<size_t>(r)));
      i += static_cast<size_t>(r);
    } else {
      // r == 0: truncated at the end -> the whole remainder is one maximal subpart.
      const size_t skip = r == 0 ? s.size() - i : static_cast<size_t>(-r);
      out += "\xEF\xBF\xBD";
      i += skip;
    }
  }
  return out;
}

size_t complete_utf8_prefix(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) { ++i; continue; }
    const int r = scan(s, i);
    if (r == 0) return i;  // valid so far, waiting for more bytes
    i += static_cast<size_t>(r > 0 ? r : -r);
  }
  return i;
}

const std::array<uint32_t, 256>& byte_to_codepoint() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    bool direct[256] = {};
    for (int b = '!'; b <= '~'; ++b) direct[b] = true;
    for (int b = 0xA1; b <= 0xAC; ++b) direct[b] = true;
    for (int b = 0xAE; b <= 0xFF; ++b) direct[b] = true;
    uint32_t n = 0;
    for (int b = 0; b < 256; ++b) t[b] = direct[b] ? static_cast<uint32_t>(b) : 256 + n++;
    return t;
  }();
  return table;
}

int codepoint_to_byte(uint32_t cp) {
  static const std::array<int16_t, 512> inv = [] {
    std::array<int16_t, 512> t{};
    t.fill(-1);
    const auto& fwd = byte_to_codepoint();
    for (int b = 0; b < 256; ++b) t[fwd[b]] = static_cast<int16_t>(b);
    return t;
  }();
  return cp < 512 ? inv[cp] : -1;
}

bool byte_level_to_bytes(std::string_view tok, std::string& out) {
  out.clear();
  size_t i = 0;
  while (i < tok.size()) {
    const auto c = static_cast<unsigned char>(tok[i]);
    uint32_t cp;
    int n = utf8_len(c);
    if (n == 0 || i + n > tok.size()) return false;
    if (n == 1) cp = c;
    else if (n == 2) cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(tok[i + 1]) & 0x3Fu);
    else return false;  // every mapped code point is < 0x800
    const int b = codepoint_to_byte(cp);
    if (b < 0) return false;
    out += static_cast<char>(b);
    i += static_cast<size_t>(n);
  }
  return true;
}

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  const auto& fwd = byte_to_codepoint();
  for (unsigned char b : bytes) append_utf8(out, fwd[b]);
  return out;
}

std::string nfc(std::string_view s) {
  bool ascii = true;
  for (char c : s) ascii &= static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(s);
  UErrorCode err = U_ZERO_ERROR;
  const icu::Normalizer2* norm = icu::Normalizer2::getNFCInstance(err);
  if (U_FAILURE(err)) throw UnsupportedError("tokenizer", strcat("ICU NFC unavailable: ", u_errorName(err)));
  std::string out;
  out.reserve(s.size());
  icu::StringByteSink<std::string> sink(&out);
  norm->normalizeUTF8(0, icu::StringPiece(s.data(), static_cast<int32_t>(s.size())), sink, nullptr, err);
  if (U_FAILURE(err)) throw ValueError("tokenizer", strcat("NFC normalization failed: ", u_errorName(err)));
  return out;
}

}  // namespace trinity::tok::uni
