// RFC 6455 client (see websocket.h). The handshake reads the HTTP response head only; bytes after it
// are already frames and stay in rbuf_. A protocol error fails the connection (close 1002, fd closed).
#include "env/websocket.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "env/ws_frame.h"

namespace trinity::env {

namespace {

constexpr size_t kMaxHandshakeBytes = 64 << 10;

// Text for messages: at most `n` bytes, with a marker when cut.
std::string clip(std::string_view s, size_t n = 200) {
  return s.size() <= n ? std::string(s) : std::string(s.substr(0, n)) + "...(" + std::to_string(s.size()) + " bytes)";
}

}  // namespace

std::unique_ptr<WebSocket> WebSocket::connect(const std::string& url_text, double timeout_s, const Headers& headers) {
  Url url = parse_url(url_text);
  if (url.scheme == "http") {
    url.scheme = "ws";
    url.text = "ws://" + url_text.substr(url_text.find("://") + 3);
  }
  const Deadline deadline(timeout_s);
  std::unique_ptr<WebSocket> ws(new WebSocket());
  ws->url_ = url.text;
  std::random_device rd;
  ws->rng_.seed(rd());
  ws->sock_ = Socket::connect(url, deadline);

  std::string key_bytes(16, '\0');
  for (char& c : key_bytes) c = static_cast<char>(rd() & 0xFF);
  const std::string key = base64_encode(key_bytes);
  std::string req = strcat("GET ", url.path, " HTTP/1.1\r\nHost: ", url.host_header(),
                           "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ", key,
                           "\r\nSec-WebSocket-Version: 13\r\n");
  for (const auto& [name, value] : headers) req += name + ": " + value + "\r\n";
  req += "\r\n";
  ws->sock_.send_all(req, deadline, "the WebSocket handshake");

  std::string& buf = ws->rbuf_;
  size_t head_end = std::string::npos;
  while ((head_end = buf.find("\r\n\r\n")) == std::string::npos) {
    if (buf.size() > kMaxHandshakeBytes)
      throw EnvError(FailReason::kProtocol,
                     strcat(ws->url_, ": handshake response head over ", kMaxHandshakeBytes, " bytes"));
    if (!ws->sock_.receive_some(buf, deadline, "the WebSocket handshake response"))
      throw EnvError(FailReason::kClosed, strcat(ws->url_, ": the server closed the connection during the handshake",
                                                 buf.empty() ? "" : ": " + clip(buf)));
  }
  const std::string head = buf.substr(0, head_end);
  buf.erase(0, head_end + 4);
  const size_t eol = head.find("\r\n");
  const std::string status_line = head.substr(0, eol);
  int status = 0;
  if (status_line.rfind("HTTP/1.", 0) == 0 && status_line.size() >= 12) status = std::atoi(status_line.c_str() + 9);
  if (status == 0)
    throw EnvError(FailReason::kProtocol,
                   strcat(ws->url_, ": not an HTTP response to the handshake: '", clip(status_line), "'"));
  if (status != 101)
    throw EnvError(FailReason::kConnect,
                   strcat(ws->url_, ": WebSocket handshake rejected with HTTP ", trim_field(status_line.substr(9)),
                          buf.empty() ? "" : " (body: " + clip(buf) + ")"));
  std::string accept, upgrade;
  for (size_t pos = eol; pos != std::string::npos && pos < head.size();) {
    const size_t next = head.find("\r\n", pos + 2);
    const std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
    pos = next;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = ascii_lower(trim_field(line.substr(0, colon)));
    if (name == "sec-websocket-accept") accept = trim_field(line.substr(colon + 1));
    if (name == "upgrade") upgrade = ascii_lower(trim_field(line.substr(colon + 1)));
  }
  if (upgrade != "websocket")
    throw EnvError(FailReason::kProtocol,
                   strcat(ws->url_, ": handshake response has Upgrade '", upgrade, "', expected 'websocket'"));
  const std::string want = websocket_accept_key(key);
  if (accept != want)
    throw EnvError(FailReason::kProtocol, strcat(ws->url_, ": handshake Sec-WebSocket-Accept '", accept,
                                                 "' does not match the key (expected '", want, "')"));
  return ws;
}

WebSocket::~WebSocket() {
  close();
}

void WebSocket::send_frame(uint8_t opcode, std::string_view payload, const Deadline& deadline, const char* what) {
  std::array<uint8_t, 4> mask{};
  const uint32_t r = rng_();
  std::memcpy(mask.data(), &r, 4);
  sock_.send_all(encode_frame(opcode, payload, true, mask), deadline, what);
}

void WebSocket::fail_protocol(const EnvError& e) {
  try {
    if (sock_.is_open() && !close_sent_) {
      close_sent_ = true;
      const std::string payload{char(0x03), char(0xEA)};  // 1002: protocol error
      send_frame(uint8_t(WsOpcode::kClose), payload, Deadline(0.2), "a close frame");
    }
  } catch (const EnvError&) {
  }
  sock_.close();
  throw e;
}

void WebSocket::send_text(std::string_view text, double timeout_s) {
  if (!sock_.is_open()) throw EnvError(FailReason::kClosed, strcat(url_, ": the WebSocket is closed"));
  send_frame(uint8_t(WsOpcode::kText), text, Deadline(timeout_s), "a message");
}

std::string WebSocket::receive_text(double timeout_s) {
  if (!sock_.is_open()) throw EnvError(FailReason::kClosed, strcat(url_, ": the WebSocket is closed"));
  const Deadline deadline(timeout_s);
  for (;;) {
    size_t consumed = 0;
    std::optional<WsFrame> frame;
    try {
      // A frame may not carry more than what is left of the message budget.
      const size_t budget = max_message_bytes_ - std::min(max_message_bytes_, partial_.size());
      frame = decode_frame(rbuf_, std::max<size_t>(budget, 125), false, url_, consumed);
      if (frame && !(frame->opcode & 0x08) && frame->payload.size() > budget)
        throw EnvError(FailReason::kProtocol,
                       strcat(url_, ": message over the limit of ", max_message_bytes_, " bytes"));
    } catch (const EnvError& e) {
      fail_protocol(e);
    }
    if (!frame) {
      if (!sock_.receive_some(rbuf_, deadline, "a reply")) {
        sock_.close();
        throw EnvError(FailReason::kClosed,
                       strcat(url_, ": the server closed the connection (EOF without a close frame)"));
      }
      continue;
    }
    rbuf_.erase(0, consumed);
    switch (static_cast<WsOpcode>(frame->opcode)) {
      case WsOpcode::kPing:
        send_frame(uint8_t(WsOpcode::kPong), frame->payload, deadline, "a pong");
        continue;
      case WsOpcode::kPong:
        continue;
      case WsOpcode::kClose: {
        int code = 1005;  // no status received
        std::string reason;
        if (frame->payload.size() >= 2) {
          code = (static_cast<uint8_t>(frame->payload[0]) << 8) | static_cast<uint8_t>(frame->payload[1]);
          reason = frame->payload.substr(2);
        }
        if (!close_sent_) {
          close_sent_ = true;
          try {
            send_frame(uint8_t(WsOpcode::kClose), frame->payload.substr(0, 2), Deadline(0.2), "a close frame");
          } catch (const EnvError&) {
          }
        }
        sock_.close();
        throw EnvError(FailReason::kClosed, strcat(url_, ": the server closed the WebSocket with code ", code,
                                                   reason.empty() ? "" : " (" + clip(reason) + ")"));
      }
      case WsOpcode::kText:
      case WsOpcode::kBinary:
        if (in_fragment_)
          fail_protocol(
              EnvError(FailReason::kProtocol, strcat(url_, ": a new message started inside a fragmented one")));
        if (frame->fin) return std::move(frame->payload);
        in_fragment_ = true;
        partial_ = std::move(frame->payload);
        continue;
      case WsOpcode::kContinuation:
        if (!in_fragment_)
          fail_protocol(EnvError(FailReason::kProtocol, strcat(url_, ": a continuation frame without a message")));
        partial_ += frame->payload;
        if (!frame->fin) continue;
        in_fragment_ = false;
        return std::exchange(partial_, std::string());
    }
  }
}

void WebSocket::close(uint16_t code, double timeout_s) noexcept {
  if (!sock_.is_open()) return;
  try {
    const Deadline deadline(timeout_s);
    if (!close_sent_) {
      close_sent_ = true;
      const std::string payload{static_cast<char>(code >> 8), static_cast<char>(code & 0xFF)};
      send_frame(uint8_t(WsOpcode::kClose), payload, deadline, "a close frame");
    }
    // Wait for the server's close frame (or EOF), skipping data frames still in flight.
    for (;;) {
      size_t consumed = 0;
      auto frame = decode_frame(rbuf_, max_message_bytes_, false, url_, consumed);
      if (frame) {
        rbuf_.erase(0, consumed);
        if (frame->opcode == uint8_t(WsOpcode::kClose)) break;
        continue;
      }
      if (!sock_.receive_some(rbuf_, deadline, "the close frame")) break;
    }
  } catch (...) {
    // close() never throws: a dead or slow server is simply cut off.
  }
  sock_.close();
}

}  // namespace trinity::env
