// Starts tests/js/env_test_server.mjs (node + npm ws) as a child process and reads the port it prints.
// The child gets a stdin pipe: it exits when the test process dies; kill() SIGKILLs it (the "server
// died mid-session" case). A missing node or ws package is reported as a setup error, not a skip.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace trinity::test {

class NodeEnvServer {
 public:
  NodeEnvServer() {
    const std::string js = std::string(TRINITY_SOURCE_DIR) + "/tests/js";
    if (!std::filesystem::exists(js + "/node_modules/ws")) {
      error = "npm package ws missing in tests/js/node_modules: run scripts/setup";
      return;
    }
    int out[2], in[2];
    if (pipe(out) != 0 || pipe(in) != 0) {
      error = "pipe failed";
      return;
    }
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      close(in[0]);
      close(in[1]);
      close(out[0]);
      close(out[1]);
      const std::string script = js + "/env_test_server.mjs";
      execlp("node", "node", script.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    stdin_fd_ = in[1];
    std::string line;
    pollfd p{out[0], POLLIN, 0};
    while (line.find('\n') == std::string::npos && poll(&p, 1, 10000) > 0) {
      char buf[64];
      const ssize_t n = read(out[0], buf, sizeof(buf));
      if (n <= 0) break;
      line.append(buf, static_cast<size_t>(n));
    }
    close(out[0]);
    port = std::atoi(line.c_str());
    if (port <= 0) error = "tests/js/env_test_server.mjs did not print a port (is node installed?): '" + line + "'";
  }
  ~NodeEnvServer() { kill(); }
  NodeEnvServer(const NodeEnvServer&) = delete;
  NodeEnvServer& operator=(const NodeEnvServer&) = delete;

  void kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    if (stdin_fd_ >= 0) close(stdin_fd_);
    stdin_fd_ = -1;
  }

  std::string ws(const std::string& path) const { return "ws://127.0.0.1:" + std::to_string(port) + path; }
  std::string http(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port) + path; }

  int port = 0;
  std::string error;

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
};

// A port with nothing listening: bound, then closed.
int unused_port();

}  // namespace trinity::test
