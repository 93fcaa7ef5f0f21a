// Trinity Studio (docs/studio.md): the web UI server of `trinity studio`. One HTTP server (the one
// `trinity serve` uses) serves the embedded page and the JSON API under /api/ that it calls: runs,
// metrics, rollouts, config, chat and the labelling queue. Every request needs the access token
// (cookie, bearer header or ?token= on the first visit); every path stays inside the root.
#pragma once

#include <memory>
#include <string>

namespace trinity::studio {

struct StudioOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: a free port
  std::string root = ".";
  std::string queue;        // preference queue file; "" = the first one found under the root
  std::string token;        // "" = a random one
  std::string version;      // shown by /api/info
  std::string trinity_bin;  // what runs are started with; "" = this executable
};

class Studio {
 public:
  explicit Studio(StudioOptions opts);
  ~Studio();
  Studio(const Studio&) = delete;
  Studio& operator=(const Studio&) = delete;
  int bind();  // returns the port
  void run();  // until stop()
  void stop();
  const std::string& token() const;
  std::string url() const;         // http://host:port/?token=...
  std::string queue_path() const;  // "" when there is none

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// 32 hex digits from the OS's random source.
std::string random_token();

}  // namespace trinity::studio
