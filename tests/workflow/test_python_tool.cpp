// execute_python_code sandbox: output and exit status, exceptions, the wall-clock timeout, the CPU,
// memory, process and file-size limits, truncated output, no inherited secrets, no network (when the
// kernel grants the namespace), the temp dir removed; and the agentscope-shaped result text.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "workflow/tools/python_tool.h"

namespace trinity::workflow {
namespace {

PythonToolOptions quick() {
  PythonToolOptions o;
  o.timeout_s = 10;
  o.cpu_s = 5;
  o.memory_bytes = 512ull << 20;
  o.file_bytes = 1 << 20;
  o.max_processes = 16;
  o.max_output_bytes = 1000;
  return o;
}

TEST(PythonTool, OutputAndExitStatus) {
  PythonTool t(quick());
  const PythonRun r = t.run("import sys\nprint('hello', 6 * 7)\nprint('warn', file=sys.stderr)\nsys.exit(3)\n");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "hello 42\n");
  EXPECT_EQ(r.err, "warn\n");
  EXPECT_FALSE(r.timed_out);
  const ToolResult ok = t.call(R"J({"code": "print(1+1)"})J");
  EXPECT_EQ(ok.text, "<returncode>0</returncode><stdout>2\n</stdout><stderr></stderr>");
  EXPECT_FALSE(ok.error);
}

TEST(PythonTool, ExceptionIsAnErrorResult) {
  PythonTool t(quick());
  const ToolResult r = t.call(R"({"code": "x = 1 / 0"})");
  EXPECT_TRUE(r.error);
  EXPECT_NE(r.text.find("<returncode>1</returncode>"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("ZeroDivisionError"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("main.py\", line 1"), std::string::npos) << r.text;
}

TEST(PythonTool, BadArgumentsAreResultsNotExceptions) {
  PythonTool t(quick());
  for (const char* a : {"not json", "[1]", R"J({"cod": "print(1)"})J", R"J({"code": 5})J"}) {
    const ToolResult r = t.call(a);
    EXPECT_TRUE(r.error) << a;
    EXPECT_EQ(r.text.rfind("Error: ", 0), 0u) << r.text;
  }
}

TEST(PythonTool, WallClockTimeout) {
  PythonToolOptions o = quick();
  o.timeout_s = 1;
  PythonTool t(o);
  const ToolResult r = t.call(R"J({"code": "import time\ntime.sleep(60)"})J");
  EXPECT_TRUE(r.timed_out);
  EXPECT_TRUE(r.error);
  EXPECT_NE(r.text.find("TimeoutError"), std::string::npos) << r.text;
  // The model may ask for less time, never for more.
  PythonTool t2(quick());
  const PythonRun slow = t2.run("import time\ntime.sleep(60)", 0.5);
  EXPECT_TRUE(slow.timed_out);
  EXPECT_LT(slow.seconds, 5);
}

TEST(PythonTool, CpuLimitEndsABusyLoop) {
  PythonToolOptions o = quick();
  o.cpu_s = 1;
  o.timeout_s = 20;
  PythonTool t(o);
  const PythonRun r = t.run("while True:\n    pass\n");
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(r.signal == SIGXCPU || r.signal == SIGKILL) << r.how;
  EXPECT_LT(r.seconds, 10);
}

TEST(PythonTool, MemoryBomb) {
  PythonTool t(quick());
  const PythonRun r = t.run("x = bytearray(8 << 30)\nprint('allocated')\n");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("MemoryError"), std::string::npos) << r.err;
}

TEST(PythonTool, ForkBombHitsTheProcessLimit) {
  PythonTool t(quick());
  const PythonRun r = t.run(
      "import os, sys\n"
      "n = 0\n"
      "try:\n"
      "    for _ in range(200):\n"
      "        pid = os.fork()\n"
      "        if pid == 0:\n"
      "            import time; time.sleep(30); os._exit(0)\n"
      "        n += 1\n"
      "except OSError as e:\n"
      "    print('refused after', n, type(e).__name__)\n"
      "    sys.exit(0)\n"
      "print('forked', n)\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("refused after", 0), 0u) << r.out;
  EXPECT_LT(r.seconds, 8) << "the sleeping children must not outlive the run";
}

TEST(PythonTool, HugeOutputIsTruncated) {
  PythonTool t(quick());
  const PythonRun r = t.run("import sys\nsys.stdout.write('x' * 100000)\nsys.stderr.write('é' * 3000)\n");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out_truncated, 99000u);
  EXPECT_EQ(r.out, std::string(1000, 'x') + "\n... [truncated 99000 bytes]");
  EXPECT_EQ(r.err_truncated, 5000u);
  EXPECT_EQ(nlohmann::json(r.err).dump().empty(), false);  // valid UTF-8 after the cut
}

TEST(PythonTool, FileSizeLimit) {
  PythonTool t(quick());
  const PythonRun r = t.run(
      "import os\n"
      "try:\n"
      "    with open('big.bin', 'wb') as f:\n"
      "        f.write(b'0' * (4 << 20))\n"
      "except OSError as e:\n"
      "    print('refused', e.errno)\n"
      "print(os.path.getsize('big.bin'))\n");
  EXPECT_NE(r.out.find("refused 27"), std::string::npos) << r.out << r.err << r.how;  // EFBIG
  EXPECT_NE(r.out.find("1048576"), std::string::npos) << r.out;
}

TEST(PythonTool, NoInheritedSecretsFreshHomeAndCwdRemoved) {
  setenv("TRINITY_TEST_SECRET", "hunter2", 1);
  PythonTool t(quick());
  const PythonRun r = t.run(
      "import os, sys\n"
      "print(sorted(os.environ))\n"
      "print(os.environ.get('TRINITY_TEST_SECRET'))\n"
      "print(os.getcwd() == os.environ['HOME'])\n"
      "print(os.getcwd())\n");
  unsetenv("TRINITY_TEST_SECRET");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("['HOME', 'LANG', 'PATH', 'PYTHONDONTWRITEBYTECODE']\nNone\nTrue\n", 0), 0u) << r.out;
  const std::string cwd = r.out.substr(r.out.rfind("True\n") + 5, r.out.size() - r.out.rfind("True\n") - 6);
  EXPECT_NE(cwd.find("trinity-py-"), std::string::npos) << cwd;
  EXPECT_FALSE(std::filesystem::exists(cwd)) << "the temp dir must be removed";
}

TEST(PythonTool, NoNetworkWhenIsolated) {
  // A listening socket in this process: reachable from a child without the namespace.
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(s, 4), 0);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string code = "import socket\nc = socket.socket()\nc.settimeout(3)\ntry:\n    c.connect(('127.0.0.1', " +
                           std::to_string(ntohs(a.sin_port)) +
                           "))\n    print('connected')\nexcept OSError as e:\n    print('refused', e)\n";
  PythonTool t(quick());
  const PythonRun r = t.run(code);
  PythonToolOptions open = quick();
  open.isolate_network = false;
  const PythonRun r2 = PythonTool(open).run(code);
  close(s);
  EXPECT_EQ(r2.out, "connected\n") << r2.err;
  EXPECT_FALSE(r2.network_isolated);
  EXPECT_FALSE(PythonTool(open).call(R"J({"code": "pass"})J").unisolated);  // not asked for
  EXPECT_EQ(PythonTool(quick()).call(R"J({"code": "pass"})J").unisolated, !r.network_isolated);
  if (!r.network_isolated) GTEST_SKIP() << "the kernel refused a new network namespace here; ran unisolated";
  EXPECT_EQ(r.out.rfind("refused", 0), 0u) << r.out << r.err;
}

TEST(PythonTool, BadOptionsNameTheKey) {
  PythonToolOptions o = quick();
  o.timeout_s = 0;
  try {
    PythonTool t(o);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("timeout"), std::string::npos) << e.what();
  }
  o = quick();
  o.python = "/nonexistent/python3";
  EXPECT_THROW(PythonTool{o}, ConfigError);
  const auto schema = nlohmann::json::parse(PythonTool(quick()).schema_json());
  EXPECT_EQ(schema["function"]["name"], "execute_python_code");
  EXPECT_EQ(schema["function"]["parameters"]["required"][0], "code");
}

}  // namespace
}  // namespace trinity::workflow
