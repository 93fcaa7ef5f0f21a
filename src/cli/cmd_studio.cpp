// `trinity studio [--host 127.0.0.1] [--port 8080] [--root DIR] [--queue Q.db] [--token T]`: the web UI
// (docs/studio.md). Prints the URL with the access token, serves until SIGINT / SIGTERM. Runs started
// from the studio keep running after it stops (they are independent processes; stop them from the
// studio or with Ctrl-C / kill -INT).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "cli/args.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/signals.h"
#include "studio/studio.h"

namespace trinity::cli {

int cmd_studio(const Argv& argv) {
  for (const auto& x : argv)
    if (x == "--help" || x == "-h") {
      std::fputs(
          "usage: trinity studio [--host 127.0.0.1] [--port 8080] [--root DIR] [--queue Q.db] [--token T]\n"
          "Serves the web UI for the runs, configs and checkpoints under DIR (default: the current directory).\n"
          "Open the printed URL (it carries the access token; TRINITY_STUDIO_TOKEN or --token sets it).\n"
          "See docs/studio.md.\n",
          stdout);
      return 0;
    }
  const Args a("studio", argv, {"host", "port", "root", "queue", "token"});
  studio::StudioOptions o;
  o.host = a.str("host", "127.0.0.1");
  const int64_t port = a.i64("port", 8080);
  if (port < 0 || port > 65535) throw ConfigError("studio", strcat("--port must be in [0, 65535], got ", port));
  o.port = static_cast<int>(port);
  o.root = a.str("root", ".");
  o.queue = a.str("queue", "");
  const char* env_token = std::getenv("TRINITY_STUDIO_TOKEN");
  o.token = a.str("token", env_token ? env_token : "");
  if (!o.token.empty() && o.token.size() < 8) throw ConfigError("studio", "--token must have at least 8 characters");
  o.version = strcat(build::kVersion, " (", build::kCommit, ")");
  StopSignals signals("");
  std::signal(SIGPIPE, SIG_IGN);
  studio::Studio s(o);
  s.bind();
  if (o.host != "127.0.0.1" && o.host != "localhost" && o.host != "::1")
    std::fprintf(stderr,
                 "trinity: warning: studio listening on %s: anyone who can reach it and has the token can "
                 "start processes as this user\n",
                 o.host.c_str());
  std::printf("trinity studio: open %s\n", s.url().c_str());
  std::printf("trinity studio: root %s; label queue %s\n", o.root.c_str(),
              s.queue_path().empty() ? "(none)" : s.queue_path().c_str());
  std::fflush(stdout);
  std::thread sig_thread([&] {
    if (signals.wait() != 0) s.stop();
  });
  s.run();
  signals.wake();
  sig_thread.join();
  std::printf("trinity studio: stopped\n");
  return 0;
}

}  // namespace trinity::cli
