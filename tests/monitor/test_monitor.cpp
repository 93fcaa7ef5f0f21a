// Monitor JSONL: complete, parseable lines under 4 threads x 1000 logs, two processes appending to
// one file, a SIGKILLed writer keeping every line, non-finite values as null, rollout examples,
// type/role validation.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "core/error.h"
#include "monitor/monitor.h"

namespace fs = std::filesystem;
using trinity::monitor::Monitor;

namespace {

std::string temp_dir() {
  std::string t = (fs::temp_directory_path() / "trinity_monitor_XXXXXX").string();
  if (!mkdtemp(t.data())) throw std::runtime_error("mkdtemp");
  return t;
}

std::vector<nlohmann::json> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));  // throws on a torn line
  return out;
}

}  // namespace

TEST(Monitor, WritesOneCompleteLinePerLog) {
  const std::string dir = temp_dir();
  {
    Monitor m(dir, "trainer", "jsonl");
    m.log({{"actor/pg_loss", -0.5}, {"critic/score/mean", 0.25}}, 3);
  }
  const auto lines = read_lines(dir + "/monitor/metrics.jsonl");
  ASSERT_EQ(lines.size(), 1u);
  const auto& j = lines[0];
  EXPECT_EQ(j["role"], "trainer");
  EXPECT_EQ(j["step"], 3);
  EXPECT_NEAR(j["time"].get<double>(), double(time(nullptr)), 5.0);
  EXPECT_EQ(j["actor/pg_loss"].get<double>(), -0.5);
  EXPECT_EQ(j["critic/score/mean"].get<double>(), 0.25);
  EXPECT_EQ(j.size(), 5u);
  // Header keys come first, so a human scanning the file sees role and step.
  std::ifstream in(dir + "/monitor/metrics.jsonl");
  std::string raw;
  std::getline(in, raw);
  EXPECT_EQ(raw.rfind("{\"role\":\"trainer\",\"step\":3,\"time\":", 0), 0u) << raw;
  fs::remove_all(dir);
}

TEST(Monitor, NonFiniteValuesAreNull) {
  const std::string dir = temp_dir();
  Monitor m(dir, "explorer", "jsonl");
  m.log({{"a", std::numeric_limits<double>::quiet_NaN()}, {"b", INFINITY}, {"c", 1.0}}, 0);
  const auto lines = read_lines(m.metrics_path());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0]["a"].is_null());
  EXPECT_TRUE(lines[0]["b"].is_null());
  EXPECT_EQ(lines[0]["c"].get<double>(), 1.0);
  fs::remove_all(dir);
}

TEST(Monitor, FourThreadsTwoMonitorsNeverInterleave) {
  const std::string dir = temp_dir();
  {
    Monitor explorer(dir, "explorer", "jsonl");
    Monitor trainer(dir, "trainer", "jsonl");
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        Monitor& m = t % 2 ? trainer : explorer;
        for (int i = 0; i < 1000; ++i) {
          std::map<std::string, double> metrics;
          for (int k = 0; k < 20; ++k) metrics[trinity::strcat("metric/with/a/long/name_", k)] = t * 1e6 + i + k;
          metrics["thread"] = t;
          m.log(metrics, i);
        }
      });
    for (auto& th : threads) th.join();
  }
  const auto lines = read_lines(dir + "/monitor/metrics.jsonl");
  ASSERT_EQ(lines.size(), 4000u);
  std::set<std::pair<int, int>> seen;
  for (const auto& j : lines) {
    ASSERT_EQ(j.size(), 24u);
    const int t = j["thread"].get<int>();
    const int step = j["step"].get<int>();
    EXPECT_EQ(j["role"], t % 2 ? "trainer" : "explorer");
    EXPECT_EQ(j["metric/with/a/long/name_19"].get<double>(), t * 1e6 + step + 19);
    seen.insert({t, step});
  }
  EXPECT_EQ(seen.size(), 4000u);
  fs::remove_all(dir);
}

TEST(Monitor, TwoProcessesAppendToOneFile) {
  const std::string dir = temp_dir();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  const bool is_child = child == 0;
  {
    Monitor m(dir, is_child ? "trainer" : "explorer", "jsonl");
    std::map<std::string, double> metrics;
    for (int k = 0; k < 50; ++k) metrics[trinity::strcat("k", k)] = k;
    for (int i = 0; i < 1000; ++i) m.log(metrics, i);
  }
  if (is_child) _exit(0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const auto lines = read_lines(dir + "/monitor/metrics.jsonl");
  ASSERT_EQ(lines.size(), 2000u);
  int trainer = 0;
  for (const auto& j : lines) {
    ASSERT_EQ(j.size(), 53u);
    trainer += j["role"] == "trainer";
  }
  EXPECT_EQ(trainer, 1000);
  fs::remove_all(dir);
}

TEST(Monitor, KilledRunKeepsEveryLoggedLine) {
  const std::string dir = temp_dir();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Monitor m(dir, "trainer", "tensorboard");
    for (int i = 0; i < 10; ++i) m.log({{"actor/pg_loss", i * 0.5}}, i);
    raise(SIGKILL);  // no destructors, no flush at exit
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  const auto lines = read_lines(dir + "/monitor/metrics.jsonl");
  ASSERT_EQ(lines.size(), 10u);
  EXPECT_EQ(lines[9]["actor/pg_loss"].get<double>(), 4.5);
  fs::remove_all(dir);
}

TEST(Monitor, RolloutExamples) {
  const std::string dir = temp_dir();
  Monitor m(dir, "trainer", "jsonl");
  m.log_text("rollout_examples", "prompt: 1+1\nresponse: \"2\"", 7);
  const auto lines = read_lines(dir + "/monitor/rollout_examples.jsonl");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["role"], "trainer");
  EXPECT_EQ(lines[0]["step"], 7);
  EXPECT_EQ(lines[0]["tag"], "rollout_examples");
  EXPECT_EQ(lines[0]["text"], "prompt: 1+1\nresponse: \"2\"");
  fs::remove_all(dir);
}

TEST(Monitor, NoneWritesNothing) {
  const std::string dir = temp_dir();
  Monitor m(dir, "bench", "none");
  m.log({{"a", 1.0}}, 0);
  m.log_text("t", "x", 0);
  EXPECT_FALSE(fs::exists(dir + "/monitor"));
  fs::remove_all(dir);
}

TEST(Monitor, RejectsUnknownTypeRoleAndReservedNames) {
  const std::string dir = temp_dir();
  try {
    Monitor m(dir, "trainer", "wandb");
    FAIL() << "wandb accepted";
  } catch (const trinity::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'wandb'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Monitor(dir, "critic", "jsonl"), trinity::ConfigError);
  Monitor m(dir, "trainer", "jsonl");
  EXPECT_THROW(m.log({{"step", 1.0}}, 0), trinity::ValueError);
  fs::remove_all(dir);
}
