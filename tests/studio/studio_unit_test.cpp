// Studio building blocks without HTTP: the YAML in-place editor, config checks reported at their key,
// the incremental metrics index (values bit-equal to a JSON parser's, appends, a rewritten file,
// downsampling that keeps spikes), root confinement (.., absolute paths, symlinks out), run status
// files (a killed run reads as not alive) and the read-only buffer browser (sqlite and JSONL, filters,
// orders, per-step best / worst).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "buffer/browse.h"
#include "buffer/sqlite_storage.h"
#include "buffer/storage.h"
#include "core/error.h"
#include "launcher/run_status.h"
#include "studio/config_edit.h"
#include "studio/http_util.h"
#include "studio/metrics_store.h"
#include "studio/root.h"

namespace fs = std::filesystem;
using namespace trinity;
using json = nlohmann::json;

namespace {

std::string tmp_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("trinity-studio-unit-" + std::to_string(getpid())) / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

void write(const std::string& path, const std::string& text, bool append = false) {
  std::ofstream o(path, append ? std::ios::app : std::ios::trunc);
  o << text;
}

int http_status_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const studio::HttpError& e) {
    return e.status;
  }
  return 200;
}

}  // namespace

TEST(StudioYamlSet, ReplacesInPlaceKeepingComments) {
  const std::string text =
      "# top comment\nmode: both   # the mode\nalgorithm:\n  algorithm_type: grpo\n  repeat_times: 8  # keep me\n"
      "  optimizer:\n    lr: 3e-4\nbuffer:\n  batch_size: 16\n";
  EXPECT_EQ(studio::yaml_set(text, "algorithm.repeat_times", 6),
            "# top comment\nmode: both   # the mode\nalgorithm:\n  algorithm_type: grpo\n  repeat_times: 6  # keep me\n"
            "  optimizer:\n    lr: 3e-4\nbuffer:\n  batch_size: 16\n");
  EXPECT_EQ(studio::yaml_set(text, "mode", "train").substr(0, 43), "# top comment\nmode: train   # the mode\nalgo");
  EXPECT_NE(studio::yaml_set(text, "algorithm.optimizer.lr", 1e-4).find("    lr: 0.0001\n"), std::string::npos);
  // Strings that YAML would read as something else are quoted.
  EXPECT_NE(studio::yaml_set(text, "mode", "true").find("mode: \"true\""), std::string::npos);
  EXPECT_NE(studio::yaml_set(text, "mode", "a: b").find("mode: \"a: b\""), std::string::npos);
  EXPECT_NE(studio::yaml_set(text, "mode", "/data/x.jsonl").find("mode: /data/x.jsonl"), std::string::npos);
}

TEST(StudioYamlSet, AddsMissingKeysAndSections) {
  const std::string text = "algorithm:\n  algorithm_type: grpo\n  # trailing comment\nbuffer:\n  batch_size: 16\n";
  EXPECT_EQ(studio::yaml_set(text, "algorithm.repeat_times", 4),
            "algorithm:\n  algorithm_type: grpo\n  repeat_times: 4\n  # trailing comment\nbuffer:\n  batch_size: 16\n");
  EXPECT_EQ(studio::yaml_set(text, "trainer.save_interval", 10), text + "trainer:\n  save_interval: 10\n");
  EXPECT_EQ(studio::yaml_set(text, "algorithm.optimizer.lr", 0.5),
            "algorithm:\n  algorithm_type: grpo\n  optimizer:\n    lr: 0.5\n  # trailing comment\nbuffer:\n  "
            "batch_size: 16\n");
  EXPECT_EQ(studio::yaml_set("", "a.b", 3), "a:\n  b: 3\n");
  EXPECT_EQ(studio::yaml_set("a:\nb: 1\n", "a.c", 3), "a:\n  c: 3\nb: 1\n");
  EXPECT_EQ(studio::yaml_set("a: ~\nb: 1\n", "a.x", true), "a:\n  x: true\nb: 1\n");
  // The result is what a YAML parser reads back: every edit round-trips.
  const std::string back = studio::yaml_set(studio::yaml_set(text, "x.y.z", "v w"), "x.y.q", 2);
  EXPECT_NE(back.find("x:\n  y:\n    z: \"v w\"\n    q: 2\n"), std::string::npos) << back;
}

TEST(StudioYamlSet, RefusesWhatItCannotEditInPlace) {
  EXPECT_EQ(http_status_of([] { studio::yaml_set("x: {a: 1}\n", "x.b", 1); }), 400);  // flow section
  EXPECT_EQ(http_status_of([] { studio::yaml_set("x: [1, 2]\n", "x", 1); }), 400);    // a list
  EXPECT_EQ(http_status_of([] { studio::yaml_set("x:\n  a: 1\n", "x", 1); }), 400);   // a section
  EXPECT_EQ(http_status_of([] { studio::yaml_set("x: 1\n", "x.a", 1); }), 400);       // a scalar as a section
  EXPECT_EQ(http_status_of([] { studio::yaml_set("x: [\n", "x", 1); }), 400);         // not YAML
  EXPECT_EQ(http_status_of([] { studio::yaml_set("x: 1\n", "x", json::array()); }), 400);
  EXPECT_EQ(http_status_of([] { studio::yaml_set("x: 1\n", "a..b", 1); }), 400);
}

TEST(StudioConfigCheck, ErrorsAtTheirKeyAndLineAndEffectiveFields) {
  const std::string dir = tmp_dir("check");
  fs::create_directories(dir + "/model");
  const std::string bad =
      "mode: both\nmodel:\n  model_path: ./model\nalgorithm:\n  algorithm_type: grpo\n  repeat_timez: 3\n";
  const json r = studio::check_config_text(bad, dir + "/c.yaml", dir, studio::form_keys());
  ASSERT_FALSE(r["ok"].get<bool>());
  ASSERT_EQ(r["errors"].size(), 1u);
  EXPECT_EQ(r["errors"][0]["key"], "algorithm.repeat_timez");
  EXPECT_EQ(r["errors"][0]["line"], 6);
  EXPECT_NE(r["errors"][0]["message"].get<std::string>().find("did you mean 'repeat_times'"), std::string::npos);
  // A bad value: the message starts with the key.
  const json v = studio::check_config_text(
      "mode: both\nmodel:\n  model_path: ./model\nalgorithm:\n  algorithm_type: grpo\n  repeat_times: -3\n",
      dir + "/c.yaml", dir, studio::form_keys());
  ASSERT_EQ(v["errors"].size(), 1u);
  EXPECT_EQ(v["errors"][0]["key"], "algorithm.repeat_times");
  EXPECT_EQ(v["errors"][0]["line"], 6);
  const json m = studio::check_config_text("mode: bothh\n", dir + "/c.yaml", dir, studio::form_keys());
  EXPECT_EQ(m["errors"][0]["key"], "mode");
  EXPECT_TRUE(m["fields"].empty());
}

TEST(StudioMetrics, IncrementalBitExactAndRewritten) {
  const std::string dir = tmp_dir("metrics");
  const std::string path = dir + "/metrics.jsonl";
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1e3, 1e3);
  std::string text;
  std::vector<double> want;
  for (int s = 1; s <= 50; ++s) {
    const double v = u(rng) * std::pow(10.0, static_cast<int>(rng() % 20) - 10);
    want.push_back(v);
    json j = {{"role", "trainer"}, {"step", s}, {"time", 1.5}, {"actor/pg_loss", v}, {"x", s}};
    text += j.dump() + "\n";
    if (s % 5 == 0) text += json({{"role", "explorer"}, {"step", s}, {"eval/acc/mean@1", s / 100.0}}).dump() + "\n";
  }
  text += "{\"role\":\"trainer\",\"step\":51,\"actor/pg_loss\":null}\n";
  write(path, text + "not json\n{\"role\":\"trainer\",\"step\":52,\"actor/pg_lo");  // a line still being written
  studio::MetricsFile f(path);
  f.refresh();
  EXPECT_EQ(f.lines(), 61);
  const auto names = f.series_names();
  EXPECT_EQ(names, (std::vector<std::string>{"explorer:eval/acc/mean@1", "trainer:actor/pg_loss", "trainer:x"}));
  auto s = f.series({"trainer:actor/pg_loss", "explorer:eval/acc/mean@1", "nope:x"});
  ASSERT_EQ(s[0].values.size(), 51u);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(s[0].steps[i], static_cast<double>(i + 1));
    EXPECT_EQ(s[0].values[i], want[i]) << i;  // bit-equal to what was written
  }
  EXPECT_TRUE(std::isnan(s[0].values[50]));
  EXPECT_EQ(s[1].values.size(), 10u);
  EXPECT_TRUE(s[2].values.empty());
  // The partial line completes, more lines arrive: only they are read, the series grows.
  write(path, "ss\":2.5}\n{\"role\":\"trainer\",\"step\":53,\"actor/pg_loss\":3.25,\"new/key\":1}\n", true);
  f.refresh();
  EXPECT_EQ(f.lines(), 63);
  s = f.series({"trainer:actor/pg_loss"});
  ASSERT_EQ(s[0].values.size(), 53u);
  EXPECT_EQ(s[0].values[51], 2.5);
  EXPECT_EQ(s[0].values[52], 3.25);
  EXPECT_EQ(f.series_names().size(), 4u);
  EXPECT_EQ(f.last_steps().at("trainer"), 53);
  EXPECT_EQ(f.last_steps().at("explorer"), 50);
  // A resumed run rewrites the file with fewer lines: indexed again from the start.
  write(path, "{\"role\":\"trainer\",\"step\":1,\"actor/pg_loss\":9}\n");
  f.refresh();
  EXPECT_EQ(f.lines(), 1);
  s = f.series({"trainer:actor/pg_loss"});
  EXPECT_EQ(s[0].values, std::vector<double>{9});
}

TEST(StudioMetrics, DownsampleKeepsEndsAndSpikes) {
  studio::MetricSeries s;
  for (int i = 0; i < 10000; ++i) {
    s.steps.push_back(i);
    s.values.push_back(i == 4321 ? 1e6 : (i == 777 ? -1e6 : std::sin(i * 0.01)));
  }
  const auto d = studio::downsample(s, 200);
  EXPECT_LE(d.steps.size(), 200u);
  EXPECT_EQ(d.steps.front(), 0);
  EXPECT_EQ(d.steps.back(), 9999);
  EXPECT_TRUE(std::is_sorted(d.steps.begin(), d.steps.end()));
  EXPECT_NE(std::find(d.values.begin(), d.values.end(), 1e6), d.values.end());
  EXPECT_NE(std::find(d.values.begin(), d.values.end(), -1e6), d.values.end());
  for (size_t i = 0; i < d.steps.size(); ++i) EXPECT_EQ(d.values[i], s.values[static_cast<size_t>(d.steps[i])]);
  const auto all = studio::downsample(s, 20000);
  EXPECT_EQ(all.values, s.values);
}

TEST(StudioRoot, StaysInside) {
  const std::string dir = tmp_dir("root");
  fs::create_directories(dir + "/a/b");
  fs::create_symlink("/etc", dir + "/a/out");
  const studio::Root r(dir);
  EXPECT_EQ(r.resolve("a/b"), fs::canonical(dir).string() + "/a/b");
  EXPECT_EQ(r.resolve("a/b/../new.yaml"), fs::canonical(dir).string() + "/a/new.yaml");
  EXPECT_EQ(r.relative(r.resolve("a/b")), "a/b");
  EXPECT_EQ(http_status_of([&] { r.resolve("../x"); }), 403);
  EXPECT_EQ(http_status_of([&] { r.resolve("a/../../x"); }), 403);
  EXPECT_EQ(http_status_of([&] { r.resolve("/etc/passwd"); }), 403);
  EXPECT_EQ(http_status_of([&] { r.resolve("a/out/passwd"); }), 403);  // a symlink out of the root
  EXPECT_EQ(http_status_of([&] { r.resolve(""); }), 400);
  EXPECT_EQ(http_status_of([&] { r.resolve(fs::canonical(dir).string() + "x/y"); }), 403);  // a sibling prefix
}

TEST(StudioRunStatus, WriterAndLiveness) {
  const std::string dir = tmp_dir("status");
  {
    launcher::RunStatus init;
    init.mode = "both", init.project = "p", init.name = "n", init.config = "/x.yaml", init.sets = {"a=1"};
    launcher::RunStatusWriter w(dir, init);
    const auto st = launcher::read_run_status(dir);
    ASSERT_TRUE(st);
    EXPECT_EQ(st->state, "running");
    EXPECT_EQ(st->pid, getpid());
    EXPECT_TRUE(launcher::run_process_alive(*st));
    EXPECT_EQ(st->sets, std::vector<std::string>{"a=1"});
    w.finish("stopped");
  }
  auto st = launcher::read_run_status(dir);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->state, "stopped");
  EXPECT_TRUE(st->ended_at.has_value());
  // Destroyed without finish(): failed.
  { launcher::RunStatusWriter w(dir, {}); }
  EXPECT_EQ(launcher::read_run_status(dir)->state, "failed");
  // A process that is gone, and a reused pid (another start time), are not alive.
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int ws = 0;
  waitpid(child, &ws, 0);
  st->state = "running", st->pid = child, st->pid_start = 1, st->host = launcher::this_host();
  EXPECT_FALSE(launcher::run_process_alive(*st));
  st->pid = getpid();
  EXPECT_FALSE(launcher::run_process_alive(*st));  // pid_start does not match
  st->pid_start = launcher::process_start_time(getpid());
  EXPECT_TRUE(launcher::run_process_alive(*st));
  st->host = "another-host";
  EXPECT_FALSE(launcher::run_process_alive(*st));
}

namespace {

buffer::Experience exp_of(int step, int task, int run, std::optional<double> reward, int version) {
  buffer::Experience e;
  e.eid.batch = std::to_string(step), e.eid.task = task, e.eid.run = run, e.eid.suffix = "abc123";
  e.tokens = {1, 2, 3, 4, 5};
  e.prompt_length = 2;
  e.logprobs = {-0.5f, -1.5f, -0.25f};
  e.action_mask = {1, 1, 1};
  e.advantages = {0.5f, 0.5f, 0.5f};
  e.reward = reward;
  e.model_version = version;
  return e;
}

void check_browser(buffer::BufferBrowser& b) {
  EXPECT_EQ(b.count(), 12);
  auto p = b.page({}, buffer::BrowseOrder::kId, 0, 5);
  EXPECT_EQ(p.total, 12);
  ASSERT_EQ(p.rows.size(), 5u);
  p = b.page({}, buffer::BrowseOrder::kId, 10, 5);
  ASSERT_EQ(p.rows.size(), 2u);
  buffer::BrowseFilter f;
  f.step = "2";
  p = b.page(f, buffer::BrowseOrder::kRewardDesc, 0, 10);
  EXPECT_EQ(p.total, 4);
  ASSERT_EQ(p.rows.size(), 4u);
  EXPECT_EQ(*p.rows[0].second.reward, 22);  // step 2: rewards 20, 21, 22; run 3 is pending (ordered last)
  EXPECT_FALSE(p.rows[3].second.reward.has_value());
  f = {};
  f.min_reward = 11, f.max_reward = 21;
  p = b.page(f, buffer::BrowseOrder::kRewardAsc, 0, 10);
  EXPECT_EQ(p.total, 5);  // 11, 12, 13, 20, 21
  ASSERT_EQ(p.rows.size(), 5u);
  EXPECT_EQ(*p.rows[0].second.reward, 11);
  EXPECT_EQ(*p.rows[4].second.reward, 21);
  f = {};
  f.model_version = 3;
  EXPECT_EQ(b.page(f, buffer::BrowseOrder::kId, 0, 10).total, 4);
  f = {};
  f.task = "1";
  EXPECT_EQ(b.page(f, buffer::BrowseOrder::kId, 0, 10).total, 6);
  f.task = "2/1";
  EXPECT_EQ(b.page(f, buffer::BrowseOrder::kId, 0, 10).total, 2);
  const auto one = b.get(b.page({}, buffer::BrowseOrder::kId, 3, 1).rows.at(0).first);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->tokens, (std::vector<int32_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(one->logprobs, (std::vector<float>{-0.5f, -1.5f, -0.25f}));
  const auto steps = b.steps();
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].step, "1");
  EXPECT_EQ(steps[2].step, "3");
  EXPECT_EQ(steps[1].count, 4);
  EXPECT_EQ(steps[1].rewarded, 3);
  EXPECT_DOUBLE_EQ(steps[1].mean, 21);
  EXPECT_EQ(steps[1].best, 22);
  EXPECT_EQ(steps[1].worst, 20);
  EXPECT_EQ(*b.get(steps[1].best_id)->reward, 22);
  EXPECT_EQ(*b.get(steps[1].worst_id)->reward, 20);
}

std::vector<buffer::Experience> sample_exps() {
  std::vector<buffer::Experience> v;
  for (int step = 1; step <= 3; ++step)
    for (int run = 0; run < 4; ++run) {
      std::optional<double> r = step * 10.0 + run;
      if (step == 2 && run == 3) r.reset();
      v.push_back(exp_of(step, run % 2, run, r, step == 3 ? 3 : 1));
    }
  return v;
}

}  // namespace

TEST(StudioBrowse, SqliteBuffer) {
  const std::string dir = tmp_dir("browse-sqlite");
  buffer::StorageConfig sc;
  sc.name = "exp";
  sc.storage_type = "sql";
  sc.path = dir + "/b.db";
  {
    auto s = buffer::open_storage(sc);
    ASSERT_TRUE(s->write(sample_exps()));
  }
  auto b = buffer::open_browser(dir + "/b.db", "exp");
  check_browser(*b);
  EXPECT_THROW(buffer::open_browser(dir + "/b.db", "other"), trinity::IoError);
}

TEST(StudioBrowse, JsonlFileGrows) {
  const std::string dir = tmp_dir("browse-jsonl");
  std::string text;
  for (const auto& e : sample_exps()) text += buffer::experience_to_json(e) + "\n";
  write(dir + "/b.jsonl", text.substr(0, text.size() / 2));
  auto b = buffer::open_browser(dir + "/b.jsonl", "");
  EXPECT_EQ(b->count(), 6);
  write(dir + "/b.jsonl", text);
  check_browser(*b);
  EXPECT_FALSE(b->get(12).has_value());
}

TEST(StudioMetrics, KeysMoveBetweenLinesOfDifferentLengths) {
  // The lookup starts where the key was in the previous line of its role; a shorter line, a key
  // that moved far, and a key that disappears must all read right.
  const std::string dir = tmp_dir("metrics-move");
  const std::string path = dir + "/metrics.jsonl";
  std::string pad(900, 'x');
  write(path,
        "{\"role\":\"trainer\",\"step\":1,\"" + pad + "\":1,\"k\":1.5}\n" +
            "{\"role\":\"trainer\",\"step\":2,\"k\":2.5}\n" + "{\"role\":\"trainer\",\"step\":3,\"a\":1,\"k\":-3}\n" +
            "{\"role\":\"trainer\",\"step\":4,\"a\":1}\n" + "{\"role\":\"trainer\",\"step\":5,\"kk\":7,\"k\":4e-3}\n");
  studio::MetricsFile f(path);
  f.refresh();
  const auto s = f.series({"trainer:k"})[0];
  EXPECT_EQ(s.steps, (std::vector<double>{1, 2, 3, 5}));
  EXPECT_EQ(s.values, (std::vector<double>{1.5, 2.5, -3, 4e-3}));
}
