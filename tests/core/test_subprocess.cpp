// run_subprocess: exit codes, line splitting (unterminated and over-long lines), stdin larger than a
// pipe buffer, env and cwd, timeout / cancel killing the whole process group (grandchildren included),
// SIGKILL after the grace for a child ignoring SIGTERM, a 50 MB flood, start failures as IoError.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/subprocess.h"

using namespace trinity;
namespace fs = std::filesystem;

namespace {

struct Ran {
  SubprocessResult res;
  std::vector<std::string> out, err;
};

Ran run(SubprocessOptions o) {
  Ran r;
  o.on_stdout_line = [&](std::string_view l) { r.out.emplace_back(l); };
  o.on_stderr_line = [&](std::string_view l) { r.err.emplace_back(l); };
  r.res = run_subprocess(o);
  return r;
}

SubprocessOptions cmd(std::vector<std::string> argv) {
  SubprocessOptions o;
  o.argv = std::move(argv);
  return o;
}

Ran sh(const std::string& script) {
  return run(cmd({"sh", "-c", script}));
}

// A process is gone when kill(pid, 0) says ESRCH or it is a zombie waiting for a (possibly absent) init.
bool gone(pid_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), {});
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

bool gone_soon(pid_t pid) {
  for (int i = 0; i < 100 && !gone(pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return gone(pid);
}

fs::path temp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("trinity_subprocess_" + name + "_" + std::to_string(getpid()));
  fs::create_directories(d);
  return fs::canonical(d);
}

}  // namespace

TEST(Subprocess, ExitCodesAreResultsNotExceptions) {
  Ran ok = sh("exit 0");
  EXPECT_EQ(ok.res.exit_code, 0);
  EXPECT_EQ(ok.res.signal, 0);
  EXPECT_FALSE(ok.res.timed_out || ok.res.cancelled);
  Ran three = sh("exit 3");
  EXPECT_EQ(three.res.exit_code, 3);
  EXPECT_EQ(three.res.describe(), "exited with status 3");
  Ran killed = sh("kill -9 $$");
  EXPECT_EQ(killed.res.exit_code, -1);
  EXPECT_EQ(killed.res.signal, SIGKILL);
  EXPECT_EQ(killed.res.describe(), "killed by signal 9 (SIGKILL)");
}

TEST(Subprocess, StdoutLinesInOrderWithFinalUnterminatedLine) {
  Ran r = sh("printf 'a\\nb\\n\\nlast'");
  EXPECT_EQ(r.out, (std::vector<std::string>{"a", "b", "", "last"}));
  EXPECT_TRUE(r.err.empty());
}

TEST(Subprocess, StderrLinesApartFromStdout) {
  Ran r = sh("echo e1 >&2; echo o1; printf e2 >&2");
  EXPECT_EQ(r.out, (std::vector<std::string>{"o1"}));
  EXPECT_EQ(r.err, (std::vector<std::string>{"e1", "e2"}));
}

TEST(Subprocess, StdinLargerThanThePipeBufferIsEchoed) {
  std::string data;
  for (int i = 0; data.size() < (1u << 20); ++i)
    data += "line " + std::to_string(i) + " " + std::string(100, 'x') + "\n";
  SubprocessOptions o = cmd({"cat"});
  o.stdin_data = data;
  Ran r = run(o);
  EXPECT_EQ(r.res.exit_code, 0);
  std::string back;
  for (const auto& l : r.out) back += l + "\n";
  EXPECT_EQ(back.size(), data.size());
  EXPECT_TRUE(back == data);
}

TEST(Subprocess, ChildThatNeverReadsStdinStillFinishes) {
  SubprocessOptions o = cmd({"sh", "-c", "sleep 0.2; echo done"});
  o.stdin_data = std::string(1 << 20, 'z');
  Ran r = run(o);
  EXPECT_EQ(r.res.exit_code, 0);
  EXPECT_EQ(r.out, (std::vector<std::string>{"done"}));
}

TEST(Subprocess, EnvAndCwdAreVisible) {
  const fs::path dir = temp_dir("cwd");
  SubprocessOptions o = cmd({"sh", "-c", "echo $FOO; pwd; echo $HOME"});
  o.cwd = dir.string();
  o.env = {{"FOO", "bar baz"}, {"HOME", "/nowhere"}};
  Ran r = run(o);
  EXPECT_EQ(r.res.exit_code, 0);
  EXPECT_EQ(r.out, (std::vector<std::string>{"bar baz", dir.string(), "/nowhere"}));
  fs::remove_all(dir);
}

TEST(Subprocess, TimeoutKillsTheWholeGroup) {
  SubprocessOptions o = cmd({"sh", "-c", "sleep 100 & echo $!; sleep 100"});
  o.timeout_s = 0.5, o.kill_grace_s = 1.0;
  Ran r = run(o);
  EXPECT_TRUE(r.res.timed_out);
  EXPECT_FALSE(r.res.cancelled);
  EXPECT_EQ(r.res.signal, SIGTERM);
  EXPECT_GE(r.res.seconds, 0.5);
  EXPECT_LT(r.res.seconds, 2.0);
  EXPECT_EQ(r.res.describe().rfind("timed out after 0.", 0), 0u) << r.res.describe();
  EXPECT_NE(r.res.describe().find(" s, killed by signal 15 (SIGTERM)"), std::string::npos) << r.res.describe();
  ASSERT_EQ(r.out.size(), 1u);
  const pid_t grandchild = std::stoi(r.out[0]);
  EXPECT_TRUE(gone_soon(grandchild)) << "grandchild " << grandchild << " outlived the timeout";
}

TEST(Subprocess, ChildIgnoringSigtermIsKilledAfterTheGrace) {
  SubprocessOptions o = cmd({"sh", "-c", "trap '' TERM; sleep 100"});
  o.timeout_s = 0.3, o.kill_grace_s = 0.5;
  Ran r = run(o);
  EXPECT_TRUE(r.res.timed_out);
  EXPECT_EQ(r.res.signal, SIGKILL);
  EXPECT_GE(r.res.seconds, 0.8);
  EXPECT_LT(r.res.seconds, 2.5);
}

TEST(Subprocess, CancelFromAnotherThread) {
  std::atomic<bool> stop{false};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop = true;
  });
  SubprocessOptions o = cmd({"sh", "-c", "sleep 100 & echo $!; wait"});
  o.cancelled = [&] { return stop.load(); };
  Ran r = run(o);
  t.join();
  EXPECT_TRUE(r.res.cancelled);
  EXPECT_FALSE(r.res.timed_out);
  EXPECT_NE(r.res.signal, 0);
  EXPECT_LT(r.res.seconds, 1.5);
  EXPECT_EQ(r.res.describe().rfind("cancelled after", 0), 0u) << r.res.describe();
  ASSERT_EQ(r.out.size(), 1u);
  EXPECT_TRUE(gone_soon(std::stoi(r.out[0])));
}

TEST(Subprocess, BackgroundProcessesDoNotOutliveTheCommand) {
  Ran r = sh("sleep 100 & echo $!");  // the background sleep keeps stdout open
  EXPECT_EQ(r.res.exit_code, 0);
  EXPECT_LT(r.res.seconds, 1.5);
  ASSERT_EQ(r.out.size(), 1u);
  EXPECT_TRUE(gone_soon(std::stoi(r.out[0])));
}

TEST(Subprocess, FloodOfOutputCompletes) {
  size_t lines = 0, bad = 0;
  SubprocessOptions o = cmd({"sh", "-c", "yes | head -c 50000000"});
  o.on_stdout_line = [&](std::string_view l) { ++lines, bad += l != "y"; };
  SubprocessResult res = run_subprocess(o);
  EXPECT_EQ(res.exit_code, 0);
  EXPECT_EQ(lines, 25'000'000u);
  EXPECT_EQ(bad, 0u);
}

TEST(Subprocess, LongLinesAreTruncated) {
  Ran big = sh("head -c 5000000 /dev/zero | tr '\\0' x");  // one 5 MB line, no newline
  ASSERT_EQ(big.out.size(), 1u);
  EXPECT_EQ(big.out[0], std::string(1 << 20, 'x'));
  SubprocessOptions o = cmd({"sh", "-c",
                             "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo short; "
                             "head -c 5000000 /dev/zero | tr '\\0' y"});
  o.max_line_bytes = 1000;
  Ran r = run(o);
  EXPECT_EQ(r.out, (std::vector<std::string>{std::string(1000, 'x'), "short", std::string(1000, 'y')}));
}

TEST(Subprocess, StartFailuresThrowIoError) {
  try {
    run_subprocess(cmd({"no-such-program-trinity"}));
    ADD_FAILURE() << "expected IoError";
  } catch (const IoError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("[subprocess] ", 0), 0u) << what;
    EXPECT_NE(what.find("no-such-program-trinity"), std::string::npos) << what;
    EXPECT_NE(what.find(fs::current_path().string()), std::string::npos) << what;
  }
  const fs::path dir = temp_dir("noexec");
  std::ofstream(dir / "script.sh") << "#!/bin/sh\necho hi\n";
  SubprocessOptions script = cmd({"./script.sh"}), missing = cmd({"./missing.sh"}), no_cwd = cmd({"sh"});
  script.cwd = missing.cwd = dir.string();
  no_cwd.cwd = (dir / "nope").string();
  EXPECT_THROW(run_subprocess(script), IoError);  // not executable
  EXPECT_THROW(run_subprocess(missing), IoError);
  EXPECT_THROW(run_subprocess(no_cwd), IoError);
  EXPECT_THROW(run_subprocess(cmd({})), ValueError);
  fs::permissions(dir / "script.sh", fs::perms::owner_exec, fs::perm_options::add);
  Ran r = run(script);  // relative to cwd, runs once executable
  EXPECT_EQ(r.out, (std::vector<std::string>{"hi"}));
  fs::remove_all(dir);
}

TEST(Subprocess, CallbackExceptionKillsAndPropagates) {
  pid_t grandchild = 0;
  SubprocessOptions o = cmd({"sh", "-c", "sleep 100 & echo $!; sleep 100"});
  o.on_stdout_line = [&](std::string_view l) {
    grandchild = std::stoi(std::string(l));
    throw ValueError("test", "bad line");
  };
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(run_subprocess(o), ValueError);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.5);
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(gone_soon(grandchild));
}

TEST(Subprocess, ConcurrentRunsFromManyThreads) {
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        const std::string tag = std::to_string(t * 10 + i);
        SubprocessOptions o = cmd({"sh", "-c", "cat; echo \"$0\"", tag});
        o.stdin_data = "in" + tag + "\n";
        Ran r = run(o);
        good += r.res.exit_code == 0 && r.out == std::vector<std::string>{"in" + tag, tag};
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(good.load(), 20);
}

// Sandbox options (fork + exec path): a cleared environment, limits applied in the child, raw output
// chunks, the namespace outcome reported, a failing child step named in the IoError.
TEST(SubprocessSandbox, ClearedEnvironmentOnlyHasTheGivenVariables) {
  setenv("TRINITY_SUBPROCESS_SECRET", "s3cret", 1);
  SubprocessOptions o = cmd({"sh", "-c", "env | sort"});
  o.clear_env = true;
  o.env = {{"PATH", "/usr/bin:/bin"}, {"A", "1"}};
  Ran r = run(o);
  unsetenv("TRINITY_SUBPROCESS_SECRET");
  EXPECT_EQ(r.res.exit_code, 0);
  // sh itself adds PWD (and maybe SHLVL / _); nothing of ours leaks.
  for (const auto& l : r.out) EXPECT_EQ(l.find("TRINITY_SUBPROCESS_SECRET"), std::string::npos) << l;
  EXPECT_NE(std::find(r.out.begin(), r.out.end(), "A=1"), r.out.end());
}

TEST(SubprocessSandbox, RlimitsApplyInTheChild) {
  SubprocessOptions o = cmd({"sh", "-c", "ulimit -f; ulimit -n; ulimit -t"});
  o.rlimits = {{RLIMIT_FSIZE, 1 << 20}, {RLIMIT_NOFILE, 64}, {RLIMIT_CPU, 7}};
  Ran r = run(o);
  EXPECT_EQ(r.res.exit_code, 0);
  EXPECT_EQ(r.out, (std::vector<std::string>{"2048", "64", "7"}));  // ulimit -f counts 512-byte blocks
  EXPECT_FALSE(r.res.network_isolated);
}

TEST(SubprocessSandbox, RawChunksAndLinesBothArrive) {
  SubprocessOptions o = cmd({"sh", "-c", "printf 'ab\\ncd'; printf 'e' >&2"});
  o.rlimits = {{RLIMIT_CORE, 0}};
  std::string out, err;
  o.on_stdout_data = [&](std::string_view c) { out += c; };
  o.on_stderr_data = [&](std::string_view c) { err += c; };
  Ran r = run(o);
  EXPECT_EQ(out, "ab\ncd");
  EXPECT_EQ(err, "e");
  EXPECT_EQ(r.out, (std::vector<std::string>{"ab", "cd"}));
}

TEST(SubprocessSandbox, TimeoutAndExecFailureOnTheForkPath) {
  SubprocessOptions o = cmd({"sh", "-c", "sleep 30"});
  o.rlimits = {{RLIMIT_CORE, 0}};
  o.timeout_s = 0.3;
  Ran r = run(o);
  EXPECT_TRUE(r.res.timed_out);
  EXPECT_LT(r.res.seconds, 5);
  SubprocessOptions bad = cmd({"/nonexistent/prog"});
  bad.rlimits = {{RLIMIT_CORE, 0}};
  try {
    run_subprocess(bad);
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("exec failed in the child"), std::string::npos) << e.what();
  }
}

TEST(SubprocessSandbox, NetworkNamespaceWhereTheKernelAllows) {
  SubprocessOptions o = cmd({"sh", "-c", "cat /proc/net/dev | wc -l"});
  o.new_net_namespace = true;
  Ran r = run(o);
  EXPECT_EQ(r.res.exit_code, 0);
  if (!r.res.network_isolated) GTEST_SKIP() << "no new network namespace allowed here";
  EXPECT_EQ(r.out, (std::vector<std::string>{"3"}));  // two header lines + lo only
}
