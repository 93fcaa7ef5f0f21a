// Helpers for the CLI e2e tests: run the `trinity` binary under a hard timeout (timeout -s KILL, so a
// hang fails the test instead of blocking CI) with stdout and stderr captured in files of `dir`.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace trinity::test {

inline const std::string kTrinity = std::string(TRINITY_BINARY_DIR) + "/trinity";

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Result {
  int code = -1;  // -1: killed by a signal (or by the timeout)
  std::string out, err;
};

// `[env] trinity <args>`; stdout/stderr go through <dir>/stdout.txt and <dir>/stderr.txt.
inline Result run_trinity(const std::string& dir, const std::string& args, int timeout_s, const std::string& env = "") {
  const std::string o = dir + "/stdout.txt", e = dir + "/stderr.txt";
  const std::string cmd =
      env + " timeout -s KILL " + std::to_string(timeout_s) + " " + kTrinity + " " + args + " >" + o + " 2>" + e;
  const int rc = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = slurp(o);
  r.err = slurp(e);
  return r;
}

}  // namespace trinity::test
