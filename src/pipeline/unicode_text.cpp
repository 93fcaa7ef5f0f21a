// UTF-8 decoding, character classes, lowercasing and word splitting (unicode_text.h). The class
// table is a sorted list of code point ranges searched by binary search; ASCII takes a fast path.
#include "pipeline/unicode_text.h"

#include <algorithm>
#include <array>

namespace trinity::pipeline {

namespace {

bool is_cont(unsigned char c) {
  return (c & 0xC0) == 0x80;
}

struct Range {
  uint32_t lo, hi;
  CharKind kind;
  Script script;
};

constexpr CharKind L = CharKind::kLetter, D = CharKind::kDigit, S = CharKind::kSpace;

// Sorted by lo, non-overlapping. U+0980-0DFF (Indic blocks) is handled in classify().
// clang-format off
constexpr std::array kRanges = std::to_array<Range>({
    {0x0085, 0x0085, S, Script::kNone},
    {0x00A0, 0x00A0, S, Script::kNone},
    {0x00AA, 0x00AA, L, Script::kLatin},
    {0x00BA, 0x00BA, L, Script::kLatin},
    {0x00C0, 0x00D6, L, Script::kLatin},
    {0x00D8, 0x00F6, L, Script::kLatin},
    {0x00F8, 0x02AF, L, Script::kLatin},  // Latin-1 tail, Extended-A/B, IPA
    {0x0300, 0x036F, L, Script::kLatin},  // combining diacritics (decomposed Latin text)
    {0x0370, 0x0373, L, Script::kGreek},
    {0x0376, 0x0377, L, Script::kGreek},
    {0x037A, 0x037D, L, Script::kGreek},
    {0x037F, 0x037F, L, Script::kGreek},
    {0x0386, 0x0386, L, Script::kGreek},
    {0x0388, 0x03FF, L, Script::kGreek},
    {0x0400, 0x0481, L, Script::kCyrillic},
    {0x0483, 0x052F, L, Script::kCyrillic},
    {0x0531, 0x0556, L, Script::kOther},  // Armenian
    {0x0561, 0x0587, L, Script::kOther},
    {0x0591, 0x05BD, L, Script::kHebrew},
    {0x05BF, 0x05BF, L, Script::kHebrew},
    {0x05C1, 0x05C2, L, Script::kHebrew},
    {0x05C4, 0x05C5, L, Script::kHebrew},
    {0x05C7, 0x05C7, L, Script::kHebrew},
    {0x05D0, 0x05EA, L, Script::kHebrew},
    {0x05EF, 0x05F2, L, Script::kHebrew},
    {0x0610, 0x061A, L, Script::kArabic},
    {0x0620, 0x065F, L, Script::kArabic},
    {0x0660, 0x0669, D, Script::kNone},
    {0x066E, 0x06D3, L, Script::kArabic},
    {0x06D5, 0x06DC, L, Script::kArabic},
    {0x06DF, 0x06E8, L, Script::kArabic},
    {0x06EA, 0x06EF, L, Script::kArabic},
    {0x06F0, 0x06F9, D, Script::kNone},
    {0x06FA, 0x06FF, L, Script::kArabic},
    {0x0750, 0x077F, L, Script::kArabic},
    {0x0900, 0x0963, L, Script::kDevanagari},
    {0x0966, 0x096F, D, Script::kNone},
    {0x0971, 0x097F, L, Script::kDevanagari},
    {0x0E01, 0x0E3A, L, Script::kThai},
    {0x0E40, 0x0E4E, L, Script::kThai},
    {0x0E50, 0x0E59, D, Script::kNone},
    {0x10A0, 0x10FF, L, Script::kOther},  // Georgian
    {0x1100, 0x11FF, L, Script::kCjk},    // Hangul jamo
    {0x1680, 0x1680, S, Script::kNone},
    {0x1E00, 0x1EFF, L, Script::kLatin},
    {0x1F00, 0x1FFF, L, Script::kGreek},
    {0x2000, 0x200A, S, Script::kNone},
    {0x2028, 0x2029, S, Script::kNone},
    {0x202F, 0x202F, S, Script::kNone},
    {0x205F, 0x205F, S, Script::kNone},
    {0x2C60, 0x2C7F, L, Script::kLatin},
    {0x3000, 0x3000, S, Script::kNone},
    {0x3005, 0x3007, L, Script::kCjk},
    {0x3041, 0x3096, L, Script::kCjk},  // Hiragana
    {0x3099, 0x309F, L, Script::kCjk},
    {0x30A1, 0x30FA, L, Script::kCjk},  // Katakana
    {0x30FC, 0x30FF, L, Script::kCjk},
    {0x3131, 0x318E, L, Script::kCjk},  // Hangul compatibility jamo
    {0x31F0, 0x31FF, L, Script::kCjk},
    {0x3400, 0x4DBF, L, Script::kCjk},
    {0x4E00, 0x9FFF, L, Script::kCjk},
    {0xA720, 0xA7FF, L, Script::kLatin},
    {0xA960, 0xA97F, L, Script::kCjk},
    {0xAB30, 0xAB6F, L, Script::kLatin},
    {0xAC00, 0xD7A3, L, Script::kCjk},  // Hangul syllables
    {0xD7B0, 0xD7FF, L, Script::kCjk},
    {0xF900, 0xFAFF, L, Script::kCjk},
    {0xFB1D, 0xFB4F, L, Script::kHebrew},
    {0xFB50, 0xFDFF, L, Script::kArabic},
    {0xFE70, 0xFEFC, L, Script::kArabic},
    {0xFF10, 0xFF19, D, Script::kNone},
    {0xFF21, 0xFF3A, L, Script::kLatin},
    {0xFF41, 0xFF5A, L, Script::kLatin},
    {0xFF66, 0xFF9F, L, Script::kCjk},
    {0xFFA0, 0xFFDC, L, Script::kCjk},
    {0x20000, 0x323AF, L, Script::kCjk},
});
// clang-format on

constexpr bool ranges_sorted() {
  for (size_t i = 0; i < kRanges.size(); ++i)
    if (kRanges[i].lo > kRanges[i].hi || (i > 0 && kRanges[i - 1].hi >= kRanges[i].lo)) return false;
  return true;
}
static_assert(ranges_sorted());

}  // namespace

uint32_t next_code_point(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  const size_t left = s.size() - i;
  auto at = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  size_t len = 0;
  uint32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1Fu;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0Fu;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07u;
  }
  bool ok = len > 0 && left >= len;
  if (ok) {
    // The second byte's range excludes overlongs (E0, F0), surrogates (ED) and > U+10FFFF (F4).
    const unsigned char b1 = at(1);
    const unsigned char lo = b0 == 0xE0 ? 0xA0 : b0 == 0xF0 ? 0x90 : 0x80;
    const unsigned char hi = b0 == 0xED ? 0x9F : b0 == 0xF4 ? 0x8F : 0xBF;
    ok = b1 >= lo && b1 <= hi;
    for (size_t k = 1; ok && k < len; ++k) {
      ok = is_cont(at(k));
      cp = (cp << 6) | (at(k) & 0x3Fu);
    }
  }
  if (!ok) {
    ++i;
    return kInvalidByte + b0;
  }
  i += len;
  return cp;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp >= kInvalidByte) {
    out.push_back(static_cast<char>(cp - kInvalidByte));
  } else if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t count_code_points(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) next_code_point(s, i);
  return n;
}

CharClass classify(uint32_t cp) {
  if (cp < 0x80) {
    if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return {CharKind::kLetter, Script::kLatin};
    if (cp >= '0' && cp <= '9') return {CharKind::kDigit, Script::kNone};
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F)) return {CharKind::kSpace, Script::kNone};
    return {};
  }
  if (cp >= 0x0980 && cp <= 0x0DFF) {  // Bengali .. Sinhala: each 128-wide block has its digits at +0x66
    const uint32_t off = cp & 0x7F;
    if (off >= 0x66 && off <= 0x6F) return {CharKind::kDigit, Script::kNone};
    return {CharKind::kLetter, Script::kOther};
  }
  auto it = std::upper_bound(kRanges.begin(), kRanges.end(), cp, [](uint32_t c, const Range& r) { return c < r.lo; });
  if (it == kRanges.begin()) return {};
  --it;
  if (cp > it->hi) return {};
  return {it->kind, it->kind == CharKind::kLetter ? it->script : Script::kNone};
}

uint32_t to_lower(uint32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
  if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 32;
  if (cp >= 0x100 && cp <= 0x17F) {  // Latin Extended-A: capital/small pairs, parity flips at 0x138
    if (cp == 0x130 || cp == 0x138 || cp == 0x149 || cp == 0x17F) return cp;
    if (cp == 0x178) return 0xFF;
    const bool even_capitals = cp < 0x138 || (cp > 0x149 && cp < 0x178);
    return (cp % 2 == 0) == even_capitals ? cp + 1 : cp;
  }
  if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 32;
  if (cp == 0x386) return 0x3AC;
  if (cp >= 0x388 && cp <= 0x38A) return cp + 37;
  if (cp == 0x38C) return 0x3CC;
  if (cp == 0x38E || cp == 0x38F) return cp + 63;
  if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
  if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
  return cp;
}

std::string fold_case(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    const uint32_t cp = next_code_point(s, i);
    const uint32_t lc = to_lower(cp);
    if (lc == cp)
      out.append(s.substr(at, i - at));
    else
      append_utf8(out, lc);
  }
  return out;
}

std::vector<std::string_view> split_words(std::string_view s) {
  std::vector<std::string_view> words;
  size_t start = 0;
  bool in_word = false;
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    const bool space = classify(next_code_point(s, i)).kind == CharKind::kSpace;
    if (space && in_word) words.push_back(s.substr(start, at - start));
    if (!space && !in_word) start = at;
    in_word = !space;
  }
  if (in_word) words.push_back(s.substr(start));
  return words;
}

}  // namespace trinity::pipeline
