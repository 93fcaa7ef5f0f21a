// HTTP/1.1 client over env::Socket (see http_client.h). The response is read into one buffer and
// parsed in place: head, then the body by Transfer-Encoding: chunked, Content-Length, or EOF.
#include "env/http_client.h"

#include "env/net.h"

#include <cctype>
#include <cstdlib>

namespace trinity::env {

namespace {

constexpr size_t kMaxResponseBytes = size_t(64) << 20;
constexpr size_t kMaxHeadBytes = 64 << 10;

// Reads more into buf; false on EOF. Refuses responses over the limit.
bool read_more(const Socket& s, std::string& buf, const Deadline& deadline) {
  if (buf.size() > kMaxResponseBytes + kMaxHeadBytes)
    throw EnvError(FailReason::kProtocol, strcat(s.where(), ": response over ", kMaxResponseBytes, " bytes"));
  return s.receive_some(buf, deadline, "the HTTP response");
}

[[noreturn]] void truncated(const Socket& s, const char* what) {
  throw EnvError(FailReason::kClosed, strcat(s.where(), ": the server closed the connection in the middle of ", what));
}

// Decodes a chunked body starting at buf[pos], reading more as needed.
std::string read_chunked(const Socket& s, std::string& buf, size_t pos, const Deadline& deadline) {
  std::string body;
  for (;;) {
    size_t eol;
    while ((eol = buf.find("\r\n", pos)) == std::string::npos)
      if (!read_more(s, buf, deadline)) truncated(s, "a chunked body");
    const std::string size_line = trim_field(buf.substr(pos, eol - pos));
    char* end = nullptr;
    const unsigned long long n = std::strtoull(size_line.c_str(), &end, 16);
    if (end == size_line.c_str() || (*end != '\0' && *end != ';'))
      throw EnvError(FailReason::kProtocol, strcat(s.where(), ": bad chunk size line '", size_line.substr(0, 40), "'"));
    if (n > kMaxResponseBytes || body.size() + n > kMaxResponseBytes)
      throw EnvError(FailReason::kProtocol, strcat(s.where(), ": response over ", kMaxResponseBytes, " bytes"));
    pos = eol + 2;
    if (n == 0) return body;  // trailers, if any, are not needed: the connection closes
    while (buf.size() < pos + n + 2)
      if (!read_more(s, buf, deadline)) truncated(s, "a chunked body");
    body.append(buf, pos, n);
    pos += n + 2;
  }
}

}  // namespace

std::string HttpResponse::header(const std::string& lower_name) const {
  for (const auto& [name, value] : headers)
    if (name == lower_name) return value;
  return "";
}

HttpResponse http_request(const std::string& method, const std::string& url_text, const std::string& body,
                          double timeout_s, const Headers& headers) {
  Url url = parse_url(url_text);
  const Deadline deadline(timeout_s);
  Socket s = Socket::connect(url, deadline);
  std::string req = strcat(method, " ", url.path, " HTTP/1.1\r\nHost: ", url.host_header(),
                           "\r\nConnection: close\r\nAccept: application/json\r\n");
  bool has_type = false;
  for (const auto& [name, value] : headers) {
    req += name + ": " + value + "\r\n";
    has_type = has_type || ascii_lower(name) == "content-type";
  }
  if (!body.empty() && !has_type) req += "Content-Type: application/json\r\n";
  if (!body.empty() || method == "POST" || method == "PUT") req += strcat("Content-Length: ", body.size(), "\r\n");
  req += "\r\n";
  req += body;
  s.send_all(req, deadline, "the HTTP request");

  std::string buf;
  size_t head_end;
  while ((head_end = buf.find("\r\n\r\n")) == std::string::npos) {
    if (buf.size() > kMaxHeadBytes)
      throw EnvError(FailReason::kProtocol, strcat(url.text, ": HTTP response head over ", kMaxHeadBytes, " bytes"));
    if (!read_more(s, buf, deadline))
      throw EnvError(FailReason::kClosed, strcat(url.text, ": the server closed the connection without a response",
                                                 buf.empty() ? "" : " (got '" + buf.substr(0, 80) + "')"));
  }
  HttpResponse r;
  const size_t eol = buf.find("\r\n");
  const std::string status_line = buf.substr(0, eol);
  if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12 || !std::isdigit(uint8_t(status_line[9])))
    throw EnvError(FailReason::kProtocol,
                   strcat(url.text, ": not an HTTP status line: '", status_line.substr(0, 80), "'"));
  r.status = std::atoi(status_line.c_str() + 9);
  for (size_t pos = eol; pos < head_end;) {
    const size_t next = buf.find("\r\n", pos + 2);
    const std::string line = buf.substr(pos + 2, next - pos - 2);
    pos = next;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    r.headers.emplace_back(ascii_lower(trim_field(line.substr(0, colon))), trim_field(line.substr(colon + 1)));
  }
  const size_t body_start = head_end + 4;
  if (method == "HEAD" || r.status == 204 || r.status == 304 || r.status / 100 == 1) return r;
  if (ascii_lower(r.header("transfer-encoding")).find("chunked") != std::string::npos) {
    r.body = read_chunked(s, buf, body_start, deadline);
    return r;
  }
  if (const std::string cl = r.header("content-length"); !cl.empty()) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(cl.c_str(), &end, 10);
    if (*end != '\0') throw EnvError(FailReason::kProtocol, strcat(url.text, ": bad Content-Length '", cl, "'"));
    if (n > kMaxResponseBytes)
      throw EnvError(FailReason::kProtocol,
                     strcat(url.text, ": response of ", n, " bytes over the limit of ", kMaxResponseBytes));
    while (buf.size() < body_start + n)
      if (!read_more(s, buf, deadline)) truncated(s, "the response body");
    r.body = buf.substr(body_start, n);
    return r;
  }
  while (read_more(s, buf, deadline)) {
  }
  r.body = buf.substr(body_start);
  return r;
}

}  // namespace trinity::env
