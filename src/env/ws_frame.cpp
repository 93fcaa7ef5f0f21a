// SHA-1, base64 and WebSocket frames (see ws_frame.h). SHA-1 is used here only for the handshake
// check that RFC 6455 prescribes, never for security.
#include "env/ws_frame.h"

#include <cstring>

#include "env/session.h"

namespace trinity::env {

namespace {

uint32_t rotl(uint32_t x, int n) {
  return (x << n) | (x >> (32 - n));
}

void sha1_block(uint32_t h[5], const uint8_t* p) {
  uint32_t w[80];
  for (int i = 0; i < 16; ++i)
    w[i] = (uint32_t(p[4 * i]) << 24) | (uint32_t(p[4 * i + 1]) << 16) | (uint32_t(p[4 * i + 2]) << 8) |
           uint32_t(p[4 * i + 3]);
  for (int i = 16; i < 80; ++i) w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
  for (int i = 0; i < 80; ++i) {
    uint32_t f, k;
    if (i < 20) {
      f = (b & c) | (~b & d);
      k = 0x5A827999;
    } else if (i < 40) {
      f = b ^ c ^ d;
      k = 0x6ED9EBA1;
    } else if (i < 60) {
      f = (b & c) | (b & d) | (c & d);
      k = 0x8F1BBCDC;
    } else {
      f = b ^ c ^ d;
      k = 0xCA62C1D6;
    }
    const uint32_t t = rotl(a, 5) + f + e + k + w[i];
    e = d;
    d = c;
    c = rotl(b, 30);
    b = a;
    a = t;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
}

}  // namespace

std::array<uint8_t, 20> sha1(std::string_view data) {
  uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  size_t n = data.size();
  size_t off = 0;
  for (; off + 64 <= n; off += 64) sha1_block(h, p + off);
  // Padding: 0x80, zeros, then the 64-bit big-endian bit length; one or two final blocks.
  uint8_t tail[128] = {};
  const size_t rest = n - off;
  if (rest > 0) std::memcpy(tail, p + off, rest);
  tail[rest] = 0x80;
  const size_t tail_len = rest + 1 + 8 <= 64 ? 64 : 128;
  const uint64_t bits = uint64_t(n) * 8;
  for (int i = 0; i < 8; ++i) tail[tail_len - 1 - i] = uint8_t(bits >> (8 * i));
  for (size_t o = 0; o < tail_len; o += 64) sha1_block(h, tail + o);
  std::array<uint8_t, 20> out{};
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = uint8_t(h[i] >> (24 - 8 * j));
  return out;
}

std::string base64_encode(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  const auto at = [&](size_t k) { return uint32_t(static_cast<uint8_t>(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (at(i) << 16) | (at(i + 1) << 8) | at(i + 2);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (const size_t rest = bytes.size() - i; rest > 0) {
    const uint32_t v = (at(i) << 16) | (rest == 2 ? at(i + 1) << 8 : 0);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string websocket_accept_key(std::string_view key) {
  const std::string text = std::string(key) + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  const auto digest = sha1(text);
  return base64_encode(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

std::string encode_frame(uint8_t opcode, std::string_view payload, bool fin,
                         std::optional<std::array<uint8_t, 4>> mask) {
  std::string out;
  out.reserve(payload.size() + 14);
  out += static_cast<char>((fin ? 0x80 : 0x00) | (opcode & 0x0F));
  const uint8_t mask_bit = mask ? 0x80 : 0x00;
  const uint64_t n = payload.size();
  if (n <= 125) {
    out += static_cast<char>(mask_bit | n);
  } else if (n <= 0xFFFF) {
    out += static_cast<char>(mask_bit | 126);
    out += static_cast<char>(n >> 8);
    out += static_cast<char>(n & 0xFF);
  } else {
    out += static_cast<char>(mask_bit | 127);
    for (int i = 7; i >= 0; --i) out += static_cast<char>((n >> (8 * i)) & 0xFF);
  }
  if (!mask) return out.append(payload);
  for (uint8_t b : *mask) out += static_cast<char>(b);
  const size_t start = out.size();
  out.append(payload);
  for (size_t i = 0; i < payload.size(); ++i) out[start + i] = static_cast<char>(out[start + i] ^ (*mask)[i & 3]);
  return out;
}

std::optional<WsFrame> decode_frame(std::string_view buf, size_t max_payload, bool expect_masked,
                                    const std::string& where, size_t& consumed) {
  consumed = 0;
  if (buf.size() < 2) return std::nullopt;
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(buf[i]); };
  const uint8_t b0 = byte(0), b1 = byte(1);
  const auto bad = [&](const std::string& what) {
    return EnvError(FailReason::kProtocol, strcat(where, ": bad WebSocket frame: ", what));
  };
  if (b0 & 0x70) throw bad(strcat("reserved bits set (first byte 0x", std::hex, int(b0), "; no extension negotiated)"));
  WsFrame f;
  f.fin = (b0 & 0x80) != 0;
  f.opcode = b0 & 0x0F;
  const bool control = (f.opcode & 0x08) != 0;
  switch (f.opcode) {
    case 0x0:
    case 0x1:
    case 0x2:
    case 0x8:
    case 0x9:
    case 0xA:
      break;
    default:
      throw bad(strcat("unknown opcode ", int(f.opcode)));
  }
  const bool masked = (b1 & 0x80) != 0;
  if (masked != expect_masked)
    throw bad(masked ? "a server frame is masked (RFC 6455 §5.1)" : "a client frame is not masked");
  uint64_t n = b1 & 0x7F;
  size_t pos = 2;
  if (n == 126) {
    if (buf.size() < 4) return std::nullopt;
    n = (uint64_t(byte(2)) << 8) | byte(3);
    pos = 4;
  } else if (n == 127) {
    if (buf.size() < 10) return std::nullopt;
    n = 0;
    for (int i = 0; i < 8; ++i) n = (n << 8) | byte(2 + i);
    if (n >> 63) throw bad("64-bit payload length has its top bit set");
    pos = 10;
  }
  if (control && (!f.fin || n > 125))
    throw bad(strcat("control frame (opcode ", int(f.opcode), ") is fragmented or longer than 125 bytes (", n, ")"));
  if (n > max_payload) throw bad(strcat("payload of ", n, " bytes exceeds the limit of ", max_payload));
  std::array<uint8_t, 4> mask{};
  if (masked) {
    if (buf.size() < pos + 4) return std::nullopt;
    for (int i = 0; i < 4; ++i) mask[i] = byte(pos + i);
    pos += 4;
  }
  if (buf.size() - pos < n) return std::nullopt;
  f.payload.assign(buf.substr(pos, n));
  if (masked)
    for (size_t i = 0; i < f.payload.size(); ++i) f.payload[i] = static_cast<char>(f.payload[i] ^ mask[i & 3]);
  consumed = pos + n;
  return f;
}

}  // namespace trinity::env
