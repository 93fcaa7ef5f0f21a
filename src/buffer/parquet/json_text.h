// JSON text primitives for the Parquet reader, appended straight to a std::string (no JSON object
// per row): strings with minimal escaping (invalid UTF-8 bytes become U+FFFD so the output always
// parses), shortest round-trip numbers via std::to_chars (NaN/Inf -> null), base64, ISO-8601 dates,
// times and timestamps, and exact decimals from unscaled big-endian two's-complement integers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace trinity::buffer::parquet {

bool is_valid_utf8(const char* p, size_t n);
void write_json_string(std::string& out, const char* p, size_t n);
void write_base64_string(std::string& out, const uint8_t* p, size_t n);  // quoted
void write_int(std::string& out, int64_t v);
void write_uint(std::string& out, uint64_t v);
void write_double(std::string& out, double v);
void write_float(std::string& out, float v);  // shortest float32 text
// Days since 1970-01-01 -> "YYYY-MM-DD" (quoted). Proleptic Gregorian.
void write_date(std::string& out, int64_t days);
// `units` of 10^-digits seconds since the epoch (digits 3, 6 or 9) -> "YYYY-MM-DDTHH:MM:SS[.f]"[Z].
// The fraction is printed with `digits` digits when non-zero.
void write_timestamp(std::string& out, int64_t units, int digits, bool utc);
// Time of day in 10^-digits seconds -> "HH:MM:SS[.f]".
void write_time(std::string& out, int64_t units, int digits);
// Decimal number unscaled * 10^-scale, written exactly as a JSON number.
void write_decimal(std::string& out, int64_t unscaled, int32_t scale);
void write_decimal_be(std::string& out, const uint8_t* p, size_t n, int32_t scale);

}  // namespace trinity::buffer::parquet
