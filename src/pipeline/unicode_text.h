// Cheap Unicode helpers for the native data operators (data_ops.h): a strict UTF-8 decoder that
// turns each invalid byte into one pseudo code point (so counts never fail on bad input), a small
// letter / digit / space classifier with the script of each letter (block ranges, not the full UCD),
// simple lowercasing and whitespace word splitting. No locale, no tables beyond one sorted range list.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trinity::pipeline {

// Pseudo code point of an invalid byte b: kInvalidByte + b (above U+10FFFF, so distinct from any
// real code point).
inline constexpr uint32_t kInvalidByte = 0x110000;

// Decodes the code point at s[i] and advances i past it. Overlong forms, surrogates, values above
// U+10FFFF and truncated sequences are invalid: the first byte decodes as kInvalidByte + byte and i
// advances by one, so every invalid byte counts as one code point.
uint32_t next_code_point(std::string_view s, size_t& i);
// Appends cp as UTF-8 (a pseudo code point appends its original byte).
void append_utf8(std::string& out, uint32_t cp);
// Number of code points (invalid bytes count 1 each).
size_t count_code_points(std::string_view s);

enum class CharKind : uint8_t { kOther, kLetter, kDigit, kSpace };
enum class Script : uint8_t { kNone, kLatin, kCjk, kCyrillic, kArabic, kGreek, kHebrew, kDevanagari, kThai, kOther };

struct CharClass {
  CharKind kind = CharKind::kOther;
  Script script = Script::kNone;  // set for letters only
};

// Letters: ASCII A-Z a-z; Latin-1 letters, Latin Extended-A/B/C/D/E/Additional, IPA, combining
// diacritics U+0300-036F (counted as Latin), fullwidth A-Z a-z; Greek (+ Extended); Cyrillic
// (+ Supplement); Hebrew letters and points; Arabic letters and marks (+ Supplement, presentation
// forms); Devanagari; Thai; CJK = Han (URO, Ext A-H, compatibility), Hiragana, Katakana (+ halfwidth,
// phonetic extensions), Hangul (syllables, jamo); and, with Script::kOther, Armenian, Georgian and the
// Indic blocks U+0980-0DFF. Digits: ASCII 0-9, fullwidth, Arabic-Indic, Devanagari, Thai and Indic
// digits. Spaces: what Python's str.isspace() accepts. Everything else (punctuation, symbols, emoji,
// controls, letters of other scripts, invalid bytes) is kOther.
CharClass classify(uint32_t cp);

// Simple lowercase of ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic capitals; others unchanged.
uint32_t to_lower(uint32_t cp);
// s with to_lower applied to every code point (invalid bytes are copied as they are).
std::string fold_case(std::string_view s);

// The maximal runs of non-space code points of s (classify(cp).kind != kSpace), in order.
std::vector<std::string_view> split_words(std::string_view s);

}  // namespace trinity::pipeline
