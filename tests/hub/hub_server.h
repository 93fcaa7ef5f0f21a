// Starts tests/hub/fake_hub.py (/usr/bin/python3, standard library) as a child process serving a
// Hub-shaped tree and reads the port it prints. The child exits when its stdin closes (the test
// process ended) and is SIGKILLed and reaped by the destructor.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace trinity::test {

class FakeHub {
 public:
  explicit FakeHub(const std::vector<std::string>& args) {
    int out[2], in[2];
    if (pipe(out) != 0 || pipe(in) != 0) {
      error = "pipe failed";
      return;
    }
    const std::string script = std::string(TRINITY_SOURCE_DIR) + "/tests/hub/fake_hub.py";
    std::vector<std::string> argv = {"/usr/bin/python3", script};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      close(in[0]);
      close(in[1]);
      close(out[0]);
      close(out[1]);
      std::vector<char*> cargv;
      for (auto& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      execv(cargv[0], cargv.data());
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
    if (port <= 0) error = "tests/hub/fake_hub.py did not print a port: '" + line + "'";
  }
  ~FakeHub() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (stdin_fd_ >= 0) close(stdin_fd_);
  }
  FakeHub(const FakeHub&) = delete;
  FakeHub& operator=(const FakeHub&) = delete;

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port); }

  int port = 0;
  std::string error;

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
};

}  // namespace trinity::test
