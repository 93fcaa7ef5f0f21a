// The studio's HTTP API in process (docs/studio.md), over a scratch root with a finished tiny GRPO run
// made by the real binary: the token on every request (bearer, cookie, ?token= redirect), paths kept
// inside the root, runs with their state (finished, a killed one failed), metrics equal to
// metrics.jsonl, rollouts of the run's sqlite buffer with per-token logprobs, config check / set /
// save, and a run started, seen running with growing metrics, stopped (SIGINT), resumed and stopped.
#include <gtest/gtest.h>

#include <regex>
#include <thread>

#include "buffer/preference_queue.h"
#include "env/http_client.h"
#include "launcher/e2e_util.h"
#include "launcher/run_status.h"
#include "studio/studio.h"

using namespace trinity::test;

namespace {

constexpr const char* kToken = "test-token-1234";

struct Http {
  int status = 0;
  json body;
  std::string text;
  trinity::env::HttpResponse raw;
};

class Client {
 public:
  explicit Client(std::string base) : base_(std::move(base)) {}
  Http call(const std::string& method, const std::string& path, const json& body = nullptr,
            trinity::env::Headers headers = {{"Authorization", std::string("Bearer ") + kToken}}) const {
    if (!body.is_null()) headers.emplace_back("Content-Type", "application/json");
    const auto r = trinity::env::http_request(method, base_ + path, body.is_null() ? "" : body.dump(), 30.0, headers);
    Http h;
    h.status = r.status, h.text = r.body, h.raw = r;
    h.body = json::parse(r.body, nullptr, false);
    return h;
  }
  Http get(const std::string& path) const { return call("GET", path); }
  Http post(const std::string& path, const json& body) const { return call("POST", path, body); }

 private:
  std::string base_;
};

std::string enc(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '_' || c == '-') {
      o += static_cast<char>(c);
    } else {
      char b[4];
      std::snprintf(b, sizeof b, "%%%02X", c);
      o += b;
    }
  }
  return o;
}

json find_run(const Client& c, const std::string& id) {
  const Http r = c.get("/api/runs");
  EXPECT_EQ(r.status, 200) << r.text;
  for (const auto& run : r.body["runs"])
    if (run["id"] == id) return run;
  return nullptr;
}

// Polls until run `id` has `state` (or the deadline passes); returns the last row seen.
json wait_state(const Client& c, const std::string& id, const std::string& state, double timeout_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  json run;
  while (std::chrono::steady_clock::now() < end) {
    run = find_run(c, id);
    if (run.is_object() && run["state"] == state) return run;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return run;
}

class StudioServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = shared_root();
    const std::string cfg = write_config(root_, "done", base_yaml(root_, "done"));
    const RunOut r = trinity::test::trinity({"run", "--config", cfg, "--set", "buffer.total_steps=2", "--set",
                                             "buffer.trainer_input.experience_buffer.storage_type=sql"},
                                            root_ + "/done.log", 120);
    ASSERT_EQ(r.rc, 0) << r.out;
  }
  void SetUp() override {
    trinity::studio::StudioOptions o;
    o.root = root_;
    o.port = 0;
    o.token = kToken;
    o.trinity_bin = trinity_bin();
    studio_ = std::make_unique<trinity::studio::Studio>(o);
    studio_->bind();
    thread_ = std::thread([this] { studio_->run(); });
    const std::string url = studio_->url();
    client_ = std::make_unique<Client>(url.substr(0, url.find("/?token=")));
  }
  void TearDown() override {
    // Nothing the test started may outlive it.
    const Http r = client_->get("/api/runs");
    if (r.body.is_object())
      for (const auto& run : r.body["runs"])
        if (run["state"] == "running" && run["pid"].is_number()) kill(run["pid"].get<int>(), SIGKILL);
    studio_->stop();
    thread_.join();
  }
  static std::string root_;
  std::unique_ptr<trinity::studio::Studio> studio_;
  std::thread thread_;
  std::unique_ptr<Client> client_;
};
std::string StudioServer::root_;

}  // namespace

TEST_F(StudioServer, TokenOnEveryRequest) {
  const Client& c = *client_;
  EXPECT_EQ(c.call("GET", "/api/runs", nullptr, {}).status, 401);
  EXPECT_EQ(c.call("GET", "/api/runs", nullptr, {}).body["error"]["code"], "unauthorized");
  EXPECT_EQ(c.call("GET", "/api/runs", nullptr, {{"Authorization", "Bearer wrong-token-00"}}).status, 401);
  EXPECT_EQ(c.call("GET", "/", nullptr, {}).status, 401);
  EXPECT_EQ(c.call("GET", "/static/app.js", nullptr, {}).status, 401);
  EXPECT_EQ(c.call("GET", "/api/runs").status, 200);
  // First visit: ?token= sets the cookie and redirects to the page without it.
  const Http v = c.call("GET", "/?token=" + std::string(kToken) + "&x=1", nullptr, {});
  EXPECT_EQ(v.status, 302);
  EXPECT_EQ(v.raw.header("location"), "/?x=1");
  const std::string cookie = v.raw.header("set-cookie");
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos);
  EXPECT_NE(cookie.find("SameSite=Strict"), std::string::npos);
  const std::string pair = cookie.substr(0, cookie.find(';'));
  const Http page = c.call("GET", "/", nullptr, {{"Cookie", "other=1; " + pair}});
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.text.find("/static/app.js"), std::string::npos);
  EXPECT_NE(page.raw.header("content-security-policy").find("default-src 'self'"), std::string::npos);
  for (const char* a : {"/static/app.js", "/static/app.css", "/static/uPlot.iife.min.js", "/static/uPlot.min.css"}) {
    const Http s = c.call("GET", a, nullptr, {{"Cookie", pair}});
    EXPECT_EQ(s.status, 200) << a;
    EXPECT_GT(s.text.size(), 100u) << a;
  }
  EXPECT_NE(c.call("GET", "/static/uPlot.iife.min.js", nullptr, {{"Cookie", pair}}).text.find("uPlot"),
            std::string::npos);
  EXPECT_EQ(c.get("/api/nope").status, 404);
  EXPECT_EQ(c.post("/api/runs", json::object()).status, 405);
  EXPECT_EQ(c.get("/api/info").body["root"], fs::canonical(root_).string());
}

TEST_F(StudioServer, PathsStayInsideTheRoot) {
  const Client& c = *client_;
  for (const char* p : {"/api/config?path=../../etc/passwd", "/api/config?path=/etc/passwd", "/api/runs/log?run=..",
                        "/api/metrics/keys?run=../../", "/api/rollouts?source=/etc/passwd"}) {
    const Http r = c.get(p);
    EXPECT_EQ(r.status, 403) << p << " " << r.text;
    EXPECT_EQ(r.body["error"]["code"], "forbidden") << p;
  }
  EXPECT_EQ(c.post("/api/config/save", {{"path", "../evil.yaml"}, {"text", "a: 1\n"}}).status, 403);
  EXPECT_FALSE(fs::exists(fs::path(root_).parent_path() / "evil.yaml"));
  EXPECT_EQ(c.post("/api/runs/start", {{"config", "/etc/hosts"}}).status, 403);
}

TEST_F(StudioServer, RunsMetricsAndRollouts) {
  const Client& c = *client_;
  const std::string id = "ckpt/t/done";
  const json run = find_run(c, id);
  ASSERT_TRUE(run.is_object()) << c.get("/api/runs").text;
  EXPECT_EQ(run["state"], "finished");
  EXPECT_EQ(run["mode"], "both");
  EXPECT_EQ(run["project"], "t");
  EXPECT_EQ(run["step"]["trainer"], 2);
  EXPECT_TRUE(run["last_reward"].is_number());
  EXPECT_EQ(run["set"].size(), 2u);

  // A run whose process died without a final status is failed.
  const std::string dead = root_ + "/ckpt/t/killed";
  fs::create_directories(dead);
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int ws = 0;
  waitpid(child, &ws, 0);
  write_text(dead + "/run_status.json", json({{"state", "running"},
                                              {"pid", child},
                                              {"pid_start", 1},
                                              {"host", trinity::launcher::this_host()},
                                              {"mode", "both"},
                                              {"started_at", 1.0}})
                                            .dump());
  const json k = find_run(c, "ckpt/t/killed");
  EXPECT_EQ(k["state"], "failed");
  EXPECT_NE(k["error"].get<std::string>().find("is gone"), std::string::npos);
  fs::remove_all(dead);

  // Metrics: every point equals the file's value.
  const Http keys = c.get("/api/metrics/keys?run=" + enc(id));
  ASSERT_EQ(keys.status, 200);
  const auto& names = keys.body["series"];
  EXPECT_NE(std::find(names.begin(), names.end(), "trainer:actor/pg_loss"), names.end());
  const Http m =
      c.get("/api/metrics?run=" + enc(id) + "&series=" + enc("trainer:actor/pg_loss,explorer:rollout/reward/mean"));
  ASSERT_EQ(m.status, 200) << m.text;
  const auto file = read_metrics(job_dir(root_, "done"));
  EXPECT_EQ(m.body["series"][0]["values"].get<std::vector<double>>(), metric_values(file, "trainer", "actor/pg_loss"));
  EXPECT_EQ(m.body["series"][1]["values"].get<std::vector<double>>(),
            metric_values(file, "explorer", "rollout/reward/mean"));
  EXPECT_EQ(m.body["series"][0]["steps"].size(), 2u);

  // Rollouts: the run's sqlite buffer, pages, one row with its tokens.
  const Http src = c.get("/api/rollouts/sources?run=" + enc(id));
  ASSERT_EQ(src.status, 200);
  ASSERT_EQ(src.body["sources"].size(), 1u) << src.text;
  const std::string source = src.body["sources"][0]["source"];
  EXPECT_EQ(src.body["sources"][0]["kind"], "sqlite");
  const int64_t count = src.body["sources"][0]["count"];
  EXPECT_EQ(count, 2 * 2 * 2);  // 2 steps x 2 tasks x 2 repeats
  const Http pg = c.get("/api/rollouts?source=" + enc(source) + "&limit=3&order=reward_desc");
  ASSERT_EQ(pg.status, 200) << pg.text;
  EXPECT_EQ(pg.body["total"], count);
  ASSERT_EQ(pg.body["rows"].size(), 3u);
  EXPECT_GE(pg.body["rows"][0]["reward"].get<double>(), pg.body["rows"][2]["reward"].get<double>());
  EXPECT_EQ(c.get("/api/rollouts?source=" + enc(source) + "&step=2").body["total"], 4);
  const int64_t rid = pg.body["rows"][0]["id"];
  const Http one = c.get("/api/rollouts/one?source=" + enc(source) + "&id=" + std::to_string(rid));
  ASSERT_EQ(one.status, 200);
  const auto& toks = one.body["tokens"];
  const int64_t pl = one.body["prompt_length"], rl = one.body["response_length"];
  ASSERT_EQ(static_cast<int64_t>(toks.size()), pl + rl);
  EXPECT_TRUE(one.body["tokenizer"].get<bool>());
  std::string response;
  for (int64_t i = pl; i < pl + rl; ++i) {
    EXPECT_TRUE(toks[static_cast<size_t>(i)]["logprob"].is_number());
    EXPECT_LE(toks[static_cast<size_t>(i)]["logprob"].get<double>(), 0.0);
    const int64_t mask = toks[static_cast<size_t>(i)]["mask"].get<int64_t>();
    EXPECT_TRUE(mask == 0 || mask == 1);
  }
  EXPECT_TRUE(toks[0]["logprob"].is_null());
  EXPECT_EQ(c.get("/api/rollouts/one?source=" + enc(source) + "&id=999999").status, 404);
  const Http steps = c.get("/api/rollouts/steps?source=" + enc(source));
  ASSERT_EQ(steps.body["steps"].size(), 2u);
  EXPECT_EQ(steps.body["steps"][0]["count"], 4);

  // Chat with the run's last checkpoint: tokens with logprobs.
  const Http models = c.get("/api/chat/models");
  std::string ckpt;
  for (const auto& mm : models.body["models"])
    if (mm["run"] == id) ckpt = mm["path"];
  ASSERT_FALSE(ckpt.empty()) << models.text;
  const Http chat = c.post("/api/chat", {{"model", ckpt},
                                         {"messages", {{{"role", "user"}, {"content", "1+1="}}}},
                                         {"max_tokens", 4},
                                         {"temperature", 0}});
  ASSERT_EQ(chat.status, 200) << chat.text;
  ASSERT_GE(chat.body["tokens"].size(), 1u);
  EXPECT_TRUE(chat.body["tokens"][0]["logprob"].is_number());
  EXPECT_EQ(c.post("/api/chat", {{"model", "data"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}}).status, 404);
  // No preference queue under the root: the label API says how to make one.
  EXPECT_EQ(c.get("/api/annotate/stats").status, 404);
}

TEST_F(StudioServer, ConfigCheckSetSave) {
  const Client& c = *client_;
  const std::string text = "# keep me\n" + base_yaml(root_, "cfg");
  Http r = c.post("/api/config/check", {{"text", text}, {"path", "configs/x.yaml"}});
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_TRUE(r.body["ok"].get<bool>()) << r.text;
  EXPECT_EQ(r.body["fields"]["algorithm.repeat_times"], 2);
  EXPECT_EQ(r.body["fields"]["buffer.batch_size"], 2);
  r = c.post("/api/config/set", {{"text", text}, {"key", "algorithm.repeat_times"}, {"value", 6}});
  ASSERT_EQ(r.status, 200);
  const std::string edited = r.body["text"];
  EXPECT_NE(edited.find("  repeat_times: 6\n"), std::string::npos);
  EXPECT_EQ(edited.find("# keep me\n"), 0u);
  r = c.post("/api/config/check", {{"text", edited}});
  EXPECT_EQ(r.body["fields"]["algorithm.repeat_times"], 6);
  std::string typo = edited;
  typo.replace(typo.find("save_interval:"), 14, "save_intervall:");
  r = c.post("/api/config/check", {{"text", typo}});
  EXPECT_FALSE(r.body["ok"].get<bool>());
  EXPECT_EQ(r.body["errors"][0]["key"], "trainer.save_intervall");
  r = c.post("/api/config/save", {{"path", "configs/x.yaml"}, {"text", edited}});
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(slurp(root_ + "/configs/x.yaml"), edited);
  EXPECT_EQ(c.get("/api/config?path=configs/x.yaml").body["text"], edited);
  const Http list = c.get("/api/configs");
  const auto& cf = list.body["configs"];
  EXPECT_NE(std::find(cf.begin(), cf.end(), "configs/x.yaml"), cf.end());
  EXPECT_EQ(c.post("/api/config/save", {{"path", "configs/x.txt"}, {"text", "a: 1\n"}}).status, 400);
}

TEST_F(StudioServer, StartStopResume) {
  const Client& c = *client_;
  write_config(root_, "live", base_yaml(root_, "live"));
  Http r = c.post("/api/runs/start", {{"config", "live.yaml"}, {"set", {"buffer.total_steps=100000"}}});
  ASSERT_EQ(r.status, 200) << r.text;
  const std::string id = "ckpt/t/live";
  EXPECT_EQ(r.body["runs"][0], id);
  json run = wait_state(c, id, "running", 60);
  ASSERT_EQ(run["state"], "running") << run.dump() << "\n" << slurp(job_dir(root_, "live") + "/studio_run.log");
  EXPECT_TRUE(run["child"].get<bool>());
  EXPECT_EQ(c.post("/api/runs/start", {{"config", "live.yaml"}, {"set", {"buffer.total_steps=100000"}}}).status, 409);
  // Metrics grow while it runs.
  auto lines = [&] { return find_run(c, id)["metrics_lines"].get<int64_t>(); };
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int64_t first = lines();
  while (lines() <= first + 2 && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_GT(lines(), first + 2);
  r = c.post("/api/runs/stop", {{"run", id}});
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body["signal"], "SIGINT");
  run = wait_state(c, id, "stopped", 60);
  ASSERT_EQ(run["state"], "stopped") << run.dump();
  EXPECT_EQ(c.post("/api/runs/stop", {{"run", id}}).status, 409);
  const Http log = c.get("/api/runs/log?run=" + enc(id) + "&tail=50");
  ASSERT_EQ(log.status, 200);
  EXPECT_GT(log.body["lines"].size(), 1u);
  // Resume: the same config and --set again; it continues from its checkpoint.
  r = c.post("/api/runs/resume", {{"run", id}});
  ASSERT_EQ(r.status, 200) << r.text;
  run = wait_state(c, id, "running", 60);
  ASSERT_EQ(run["state"], "running") << run.dump();
  EXPECT_EQ(run["set"][0], "buffer.total_steps=100000");
  ASSERT_EQ(c.post("/api/runs/stop", {{"run", id}}).status, 200);
  run = wait_state(c, id, "stopped", 60);
  EXPECT_EQ(run["state"], "stopped") << run.dump();
}

TEST(StudioLabel, QueueUnderTheRootIsServed) {
  // A preference queue found under the root (or given with --queue) backs /api/annotate/*.
  const std::string root = (fs::temp_directory_path() / ("trinity-studio-label-" + std::to_string(getpid()))).string();
  fs::remove_all(root);
  fs::create_directories(root + "/queues");
  {
    trinity::buffer::PreferenceQueue q(root + "/queues/prefs.db");
    for (int i = 0; i < 2; ++i) {
      trinity::buffer::NewPair p;
      p.prompt = json::array({{{"role", "user"}, {"content", "q" + std::to_string(i)}}}).dump();
      p.response_a = "a" + std::to_string(i), p.response_b = "b" + std::to_string(i);
      ASSERT_TRUE(q.enqueue(p));
    }
  }
  trinity::studio::StudioOptions o;
  o.root = root, o.port = 0, o.token = kToken;
  trinity::studio::Studio s(o);
  s.bind();
  std::thread th([&] { s.run(); });
  const std::string url = s.url();
  const Client c(url.substr(0, url.find("/?token=")));
  EXPECT_EQ(c.get("/api/info").body["queue"], "queues/prefs.db");
  const Http next = c.get("/api/annotate/next?annotator=ann");
  ASSERT_EQ(next.status, 200) << next.text;
  EXPECT_EQ(next.body["a"], "a0");
  const Http lab =
      c.post("/api/annotate/label", {{"id", next.body["id"]}, {"lease", next.body["lease"]}, {"choice", "b"}});
  EXPECT_EQ(lab.status, 200) << lab.text;
  EXPECT_EQ(c.get("/api/annotate/stats").body["states"]["labelled"], 1);
  EXPECT_EQ(c.post("/api/annotate/undo", {{"id", next.body["id"]}, {"annotator", "other"}}).status, 409);
  EXPECT_EQ(c.call("GET", "/api/annotate/stats", nullptr, {}).status, 401);
  s.stop();
  th.join();
  fs::remove_all(root);
}
