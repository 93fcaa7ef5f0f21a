// `mode: serve` end to end with the real binary: the official `openai` npm client drives the endpoint
// (a two-turn conversation and a streamed call), rewards them with POST /feedback; the serving process
// is killed with SIGKILL before /commit and restarted (no rewarded call may be lost); /commit writes the
// experiences; a `mode: train` process trains on them; the endpoint then serves the new version.
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "e2e_util.h"

using namespace trinity::test;

namespace {

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  close(fd);
  return ntohs(a.sin_port);
}

json get_json(int port, const std::string& path, const std::string& key = "") {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(30, 0);
  httplib::Headers h;
  if (!key.empty()) h.emplace("Authorization", "Bearer " + key);
  auto r = cli.Get(path, h);
  if (!r || r->status != 200) return json();
  return json::parse(r->body, nullptr, false);
}

json post_json(int port, const std::string& path, const std::string& key, const std::string& body = "{}",
               int* status = nullptr) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(60, 0);
  httplib::Headers h;
  if (!key.empty()) h.emplace("Authorization", "Bearer " + key);
  auto r = cli.Post(path, h, body, "application/json");
  if (status) *status = r ? r->status : -1;
  if (!r) return json();
  return json::parse(r->body, nullptr, false);
}

// Waits until /health answers (the process is serving); false after `secs`.
bool wait_serving(int port, double secs) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(secs);
  while (std::chrono::steady_clock::now() < end) {
    if (!get_json(port, "/health").is_null()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace

TEST(ServeMode, FeedbackSurvivesKillCommitTrainsAndNewWeightsAreServed) {
  const std::string& root = shared_root();
  const RunOut m = ::trinity::test::trinity(
      {"init-model", "--arch", "qwen2", "--hidden", "32", "--layers", "1", "--heads", "2", "--intermediate", "64",
       "--max-pos", "512", "--tokenizer", "bytes", "--seed", "1", "--out", root + "/serve_model"},
      root + "/init_serve.log");
  ASSERT_EQ(m.rc, 0) << m.out;
  const int port = free_port();
  const std::string key = "serve-test-key";
  const std::string y = "project: t\nname: serve\ncheckpoint_root_dir: " + root +
                        "/ckpt\nmode: serve\n"
                        "model:\n  model_path: " +
                        root +
                        "/serve_model\n  max_prompt_tokens: 200\n  max_response_tokens: 8\n"
                        "algorithm:\n  algorithm_type: grpo\n  repeat_times: 2\n  optimizer: {lr: 1e-3}\n"
                        "buffer:\n  batch_size: 1\n  train_batch_size: 2\n  total_steps: 1\n"
                        "  trainer_input:\n    experience_buffer: {name: served, storage_type: sql, path: " +
                        root +
                        "/serve_buffer.db}\n"
                        "explorer:\n  proxy_port: " +
                        std::to_string(port) + "\n  proxy_api_key: " + key +
                        "\nsynchronizer:\n  sync_method: checkpoint\ntrainer:\n  save_interval: 1\n  total_steps: 1\n";
  const std::string cfg = write_config(root, "serve", y);

  Proc serve = spawn({trinity_bin(), "run", "--config", cfg}, root + "/serve1.log");
  ASSERT_TRUE(wait_serving(port, 60)) << slurp(root + "/serve1.log");
  // A wrong key is refused on the OpenAI routes and on /feedback.
  int status = 0;
  post_json(port, "/feedback", "wrong", R"({"reward": 1, "msg_ids": ["x"]})", &status);
  EXPECT_EQ(status, 401);

  const std::string node_cmd = "node '" + std::string(TRINITY_SOURCE_DIR) + "/tests/js/serve_mode_client.mjs' " +
                               "http://127.0.0.1:" + std::to_string(port) + " " + key + " > '" + root +
                               "/serve_client.out' 2>&1";
  ASSERT_EQ(std::system(node_cmd.c_str()), 0) << slurp(root + "/serve_client.out");
  const json client = json::parse(slurp(root + "/serve_client.out"));
  ASSERT_EQ(client["ids"].size(), 3u);
  EXPECT_EQ(client["feedback"][0]["body"]["updated"], 2) << client.dump();
  EXPECT_EQ(client["feedback"][1]["body"]["updated"], 1) << client.dump();
  json mj = get_json(port, "/metrics");
  EXPECT_EQ(mj["rollout/ready_experience_count"], 3) << mj.dump();
  EXPECT_EQ(mj["rollout/model_0/total_request_count"], 3) << mj.dump();

  // kill -9 before /commit: the rewarded calls are on disk.
  kill(serve.pid, SIGKILL);
  wait_exit(serve, 10);
  serve = spawn({trinity_bin(), "run", "--config", cfg}, root + "/serve2.log");
  ASSERT_TRUE(wait_serving(port, 60)) << slurp(root + "/serve2.log");
  EXPECT_NE(slurp(root + "/serve2.log").find("3 rewarded call(s) awaiting /commit"), std::string::npos)
      << slurp(root + "/serve2.log");
  const json c = post_json(port, "/commit", key);
  // run 0's two turns are one token-consistent conversation: one experience; run 1: one.
  EXPECT_EQ(c["experiences"], 2) << c.dump();
  EXPECT_EQ(c["step"], 1) << c.dump();
  EXPECT_EQ(post_json(port, "/commit", key)["experiences"], 0);  // nothing twice
  mj = get_json(port, "/metrics");
  EXPECT_EQ(mj["rollout/total_experience_count"], 2) << mj.dump();
  EXPECT_EQ(mj["rollout/model_0/model_version"], 0) << mj.dump();

  // A trainer process trains one step on the committed experiences; the endpoint picks it up.
  const RunOut tr =
      ::trinity::test::trinity({"run", "--config", cfg, "--set", "mode=train"}, root + "/serve_train.log", 180);
  ASSERT_EQ(tr.rc, 0) << tr.out;
  bool updated = false;
  for (int i = 0; i < 100 && !updated; ++i) {
    updated = get_json(port, "/metrics")["rollout/model_0/model_version"] == 1;
    if (!updated) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(updated) << slurp(root + "/serve2.log");
  EXPECT_EQ(get_json(port, "/v1/models", key)["data"][0]["model_version"], 1);
  kill(serve.pid, SIGINT);
  EXPECT_EQ(wait_exit(serve, 30), 130) << slurp(root + "/serve2.log");  // stopped by Ctrl-C, as every mode
}
