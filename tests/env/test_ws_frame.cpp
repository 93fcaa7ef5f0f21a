// SHA-1 / base64 / Sec-WebSocket-Accept against published vectors (FIPS 180 examples, RFC 4648 §10,
// RFC 6455 §1.3), and WebSocket frame encoding / decoding: 7/16/64-bit lengths, masking, partial
// input, and the frames a client must refuse.
#include <gtest/gtest.h>

#include <string>

#include "env/net.h"
#include "env/ws_frame.h"

namespace trinity::env {
namespace {

std::string hex(const std::array<uint8_t, 20>& d) {
  static const char* k = "0123456789abcdef";
  std::string s;
  for (uint8_t b : d) {
    s += k[b >> 4];
    s += k[b & 15];
  }
  return s;
}

TEST(Sha1, KnownVectors) {
  EXPECT_EQ(hex(sha1("")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(hex(sha1("abc")), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(hex(sha1("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  EXPECT_EQ(hex(sha1(std::string(1000000, 'a'))), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
  // Lengths around the padding boundary (55, 56, 63, 64 bytes) against values from `sha1sum`.
  EXPECT_EQ(hex(sha1(std::string(55, 'a'))), "c1c8bbdc22796e28c0e15163d20899b65621d65a");
  EXPECT_EQ(hex(sha1(std::string(56, 'a'))), "c2db330f6083854c99d4b5bfb6e8f29f201be699");
  EXPECT_EQ(hex(sha1(std::string(64, 'a'))), "0098ba824b5c16427bd7a1122a5a442a25ec644d");
}

TEST(Base64, Rfc4648Vectors) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64_encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_encode(std::string("\xff\xfe\x00", 3)), "//4A");
}

TEST(WebSocketAccept, Rfc6455Example) {
  EXPECT_EQ(websocket_accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST(WsFrame, RoundTripLengthsAndMasking) {
  const std::array<uint8_t, 4> mask{0x37, 0xfa, 0x21, 0x3d};
  for (size_t n : {size_t(0), size_t(5), size_t(125), size_t(126), size_t(65535), size_t(65536), size_t(200000)}) {
    std::string payload(n, '\0');
    for (size_t i = 0; i < n; ++i) payload[i] = static_cast<char>('a' + i % 26);
    for (bool masked : {false, true}) {
      const std::string wire = encode_frame(0x1, payload, true, masked ? std::optional(mask) : std::nullopt);
      const size_t header = (n <= 125 ? 2 : n <= 65535 ? 4 : 10) + (masked ? 4 : 0);
      ASSERT_EQ(wire.size(), header + n) << "n=" << n;
      EXPECT_EQ(static_cast<uint8_t>(wire[1]) & 0x7F, n <= 125 ? n : n <= 65535 ? 126 : 127);
      if (masked && n > 0) {
        EXPECT_NE(wire.substr(header, std::min<size_t>(n, 64)), payload.substr(0, std::min<size_t>(n, 64)));
      }
      size_t consumed = 0;
      // Every strict prefix asks for more bytes.
      for (size_t cut : {size_t(0), size_t(1), header - 1, wire.size() - 1}) {
        if (cut < wire.size()) {
          EXPECT_FALSE(decode_frame(wire.substr(0, cut), 1 << 20, masked, "t", consumed)) << cut;
        }
      }
      auto f = decode_frame(wire + "extra", 1 << 20, masked, "t", consumed);
      ASSERT_TRUE(f) << "n=" << n;
      EXPECT_EQ(consumed, wire.size());
      EXPECT_TRUE(f->fin);
      EXPECT_EQ(f->opcode, 0x1);
      EXPECT_EQ(f->payload, payload);
    }
  }
}

TEST(WsFrame, Rfc6455MaskedHelloExample) {
  // RFC 6455 §5.7: a masked "Hello" from a client.
  const std::string wire("\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58", 11);
  EXPECT_EQ(encode_frame(0x1, "Hello", true, std::array<uint8_t, 4>{0x37, 0xfa, 0x21, 0x3d}), wire);
  size_t consumed = 0;
  auto f = decode_frame(wire, 100, true, "t", consumed);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->payload, "Hello");
  // The unmasked form, and a fragment pair "Hel" + "lo".
  EXPECT_EQ(encode_frame(0x1, "Hello", true, std::nullopt), std::string("\x81\x05Hello", 7));
  EXPECT_EQ(encode_frame(0x1, "Hel", false, std::nullopt), std::string("\x01\x03Hel", 5));
  EXPECT_EQ(encode_frame(0x0, "lo", true, std::nullopt), std::string("\x80\x02lo", 4));
}

FailReason reason_of(const std::string& wire, size_t max_payload = 1 << 20, bool expect_masked = false) {
  size_t consumed = 0;
  try {
    decode_frame(wire, max_payload, expect_masked, "ws://t", consumed);
  } catch (const EnvError& e) {
    EXPECT_NE(std::string(e.what()).find("ws://t"), std::string::npos) << e.what();
    return e.reason();
  }
  ADD_FAILURE() << "frame accepted";
  return FailReason::kConnect;
}

TEST(WsFrame, RefusesBadFrames) {
  EXPECT_EQ(reason_of(std::string("\xC1\x00", 2)), FailReason::kProtocol);          // RSV1 set
  EXPECT_EQ(reason_of(std::string("\x83\x00", 2)), FailReason::kProtocol);          // opcode 3
  EXPECT_EQ(reason_of(std::string("\x09\x00", 2)), FailReason::kProtocol);          // fragmented ping
  EXPECT_EQ(reason_of(std::string("\x89\x7E\x00\x80", 4)), FailReason::kProtocol);  // 128-byte ping
  EXPECT_EQ(reason_of(encode_frame(0x1, "hi", true, std::array<uint8_t, 4>{1, 2, 3, 4})),
            FailReason::kProtocol);  // a masked server frame
  EXPECT_EQ(reason_of(std::string("\x81\x7F\x80\x00\x00\x00\x00\x00\x00\x00", 10)), FailReason::kProtocol);
  // Over the limit: refused from the header alone, before the payload arrives.
  EXPECT_EQ(reason_of(std::string("\x81\x7F\x00\x00\x00\x01\x00\x00\x00\x00", 10), 1 << 20), FailReason::kProtocol);
}

TEST(Url, ParsesAndRefuses) {
  Url u = parse_url("ws://127.0.0.1:8011/ws?x=1");
  EXPECT_EQ(u.host, "127.0.0.1");
  EXPECT_EQ(u.port, 8011);
  EXPECT_EQ(u.path, "/ws?x=1");
  u = parse_url("http://example.org");
  EXPECT_EQ(u.port, 80);
  EXPECT_EQ(u.path, "/");
  u = parse_url("http://[::1]:9000/a");
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.host_header(), "[::1]:9000");
  EXPECT_THROW(parse_url("wss://h/x"), ConfigError);
  EXPECT_THROW(parse_url("localhost:80"), ConfigError);
  EXPECT_THROW(parse_url("http://h:99999/"), ConfigError);
  EXPECT_THROW(parse_url("http://:80/"), ConfigError);
}

}  // namespace
}  // namespace trinity::env
