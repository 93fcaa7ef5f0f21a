// A blocking RFC 6455 WebSocket client over POSIX sockets (no TLS): opening handshake with a random
// Sec-WebSocket-Key checked against Sec-WebSocket-Accept, masked client frames, fragmented messages
// reassembled, pings answered, a server close turned into EnvError(kClosed) carrying its code and
// reason. Every call has a deadline. Errors: kConnect (refused, unreachable, handshake rejected with an
// HTTP status), kTimeout, kClosed (EOF, reset, close frame), kProtocol (bad frame, bad accept key, a
// message over max_message_bytes). Not thread-safe: one thread uses one WebSocket at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "env/net.h"

namespace trinity::env {

using Headers = std::vector<std::pair<std::string, std::string>>;

class WebSocket {
 public:
  static constexpr size_t kDefaultMaxMessageBytes = size_t(64) << 20;

  // url: ws://host:port/path (http:// is accepted and means the same). Throws EnvError.
  static std::unique_ptr<WebSocket> connect(const std::string& url, double timeout_s, const Headers& headers = {});
  ~WebSocket();
  WebSocket(const WebSocket&) = delete;
  WebSocket& operator=(const WebSocket&) = delete;

  // One text message, as a single masked frame.
  void send_text(std::string_view text, double timeout_s);
  // The next complete text (or binary) message; pings are answered and pongs skipped on the way.
  std::string receive_text(double timeout_s);
  // Sends a close frame, waits up to timeout_s for the server's (skipping other frames), closes the
  // socket. Never throws; safe to call twice.
  void close(uint16_t code = 1000, double timeout_s = 1.0) noexcept;

  bool is_open() const { return sock_.is_open(); }
  const std::string& url() const { return url_; }
  void set_max_message_bytes(size_t n) { max_message_bytes_ = n; }

 private:
  WebSocket() = default;
  void send_frame(uint8_t opcode, std::string_view payload, const Deadline& deadline, const char* what);
  [[noreturn]] void fail_protocol(const EnvError& e);

  Socket sock_;
  std::string url_;
  std::string rbuf_;     // bytes received, not yet decoded
  std::string partial_;  // a fragmented message being reassembled
  bool in_fragment_ = false;
  bool close_sent_ = false;
  size_t max_message_bytes_ = kDefaultMaxMessageBytes;
  std::mt19937 rng_;  // mask keys (RFC 6455 asks for unpredictable ones; no security relies on them here)
};

}  // namespace trinity::env
