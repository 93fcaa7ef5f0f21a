// A small blocking HTTP/1.1 client for environment servers: one request per connection
// ("Connection: close"), a deadline on the whole request (connect, send, response), Content-Length,
// chunked and read-until-EOF bodies, a 64 MiB response limit. Failures are EnvError (kConnect,
// kTimeout, kClosed, kProtocol); an HTTP status >= 400 is a normal response, the caller decides.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "env/websocket.h"  // Headers

namespace trinity::env {

struct HttpResponse {
  int status = 0;
  std::string body;
  Headers headers;  // names lower-cased, in the order received
  // The first header with this (lower-case) name, "" when absent.
  std::string header(const std::string& lower_name) const;
};

// method: "GET", "POST", ...; url: http://host:port/path?query (ws:// accepted). A non-empty body is
// sent as application/json unless `headers` names a Content-Type. Throws EnvError.
HttpResponse http_request(const std::string& method, const std::string& url, const std::string& body, double timeout_s,
                          const Headers& headers = {});

}  // namespace trinity::env
