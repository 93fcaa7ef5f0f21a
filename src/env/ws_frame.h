// RFC 6455 pieces without I/O, so they can be tested alone: SHA-1 (FIPS 180-4) and base64 (RFC 4648)
// for the handshake's Sec-WebSocket-Accept, and frame encoding / incremental decoding (7-, 16- and
// 64-bit payload lengths, masking). decode_frame checks the header before the payload has arrived, so
// an oversized frame is refused without buffering it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trinity::env {

std::array<uint8_t, 20> sha1(std::string_view data);
std::string base64_encode(std::string_view bytes);
// base64(SHA-1(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")), RFC 6455 §4.2.2.
std::string websocket_accept_key(std::string_view key);

enum class WsOpcode : uint8_t {
  kContinuation = 0x0,
  kText = 0x1,
  kBinary = 0x2,
  kClose = 0x8,
  kPing = 0x9,
  kPong = 0xA
};

struct WsFrame {
  bool fin = true;
  uint8_t opcode = 0;
  std::string payload;  // unmasked
};

// One frame; a client masks with `mask` (RFC 6455 §5.3), a server sends unmasked (nullopt).
std::string encode_frame(uint8_t opcode, std::string_view payload, bool fin,
                         std::optional<std::array<uint8_t, 4>> mask);

// Decodes one frame from the front of `buf`: nullopt when more bytes are needed, else the frame and
// `consumed` bytes. Throws EnvError(kProtocol) naming `where` for reserved bits, an unknown opcode, a
// fragmented or > 125-byte control frame, a 64-bit length with its top bit set, a payload over
// `max_payload`, or masking that differs from `expect_masked` (a client must refuse masked frames).
std::optional<WsFrame> decode_frame(std::string_view buf, size_t max_payload, bool expect_masked,
                                    const std::string& where, size_t& consumed);

}  // namespace trinity::env
