// Unicode helpers for the tokenizer (internal): UTF-8 validation, the GPT-2 byte<->char map used by
// byte-level BPE, NFC normalization (ICU), and lossy UTF-8 decoding that replaces each maximal
// invalid subpart with U+FFFD (the WHATWG / Rust from_utf8_lossy rule both HF implementations use).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace trinity::tok::uni {

// Byte offset of the first invalid UTF-8 sequence in s, or npos if s is valid UTF-8.
size_t find_invalid_utf8(std::string_view s);
// Length of the UTF-8 sequence starting with lead byte c (1..4), 0 for a continuation/invalid byte.
int utf8_len(unsigned char c);
// Appends code point cp as UTF-8.
void append_utf8(std::string& out, uint32_t cp);
// Decodes bytes to valid UTF-8, replacing invalid subparts with U+FFFD.
std::string lossy_utf8(std::string_view bytes);
// Length of the longest prefix of `bytes` that ends at a complete UTF-8 boundary, treating a trailing
// incomplete-but-valid-so-far sequence as pending (streaming decode).
size_t complete_utf8_prefix(std::string_view bytes);

// GPT-2 bytes_to_unicode: byte b <-> a printable code point.
const std::array<uint32_t, 256>& byte_to_codepoint();
// Inverse map: returns -1 for a code point that is not the image of a byte.
int codepoint_to_byte(uint32_t cp);
// Maps a byte-level token string ("Ġhello") to raw bytes (" hello"); false if some char is unmapped.
bool byte_level_to_bytes(std::string_view token, std::string& out);
// Maps raw bytes to the byte-level alphabet.
std::string bytes_to_byte_level(std::string_view bytes);

// NFC normalization via ICU. Input must be valid UTF-8. ASCII-only input is returned unchanged.
std::string nfc(std::string_view s);

}  // namespace trinity::tok::uni
