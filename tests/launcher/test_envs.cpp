// env_workflow end to end with the real binary against the shipped environment server
// (examples/envs/openenv_server.py, standard library): OpenEnv over WebSocket and HTTP, AgentGym's
// protocol, the alfworld_workflow preset, and the failure contract — a server that dies mid-episode,
// never answers, answers garbage or never ends an episode: the run ends (no hang) with the failures
// counted as rollout/failed/env_<reason>; and the tool environment with action_format: tool_call (the
// tool's schema comes from the server's /schema).
#include "e2e_util.h"

using namespace trinity::test;

namespace {

const std::string kServer = std::string(TRINITY_SOURCE_DIR) + "/examples/envs/openenv_server.py";

// An environment server on a free port; killed with the test.
class EnvServer {
 public:
  EnvServer(const std::string& log, std::vector<std::string> flags) {
    std::vector<std::string> args = {"/usr/bin/python3", kServer, "--port", "0"};
    args.insert(args.end(), flags.begin(), flags.end());
    proc_ = spawn(args, log);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < end) {
      const std::string out = slurp(log);
      if (const size_t at = out.find("listening on ");
          at != std::string::npos && out.find('\n', at) != std::string::npos) {
        url_ = out.substr(at + 13, out.find('\n', at) - at - 13);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "environment server did not start: " << slurp(log);
  }
  ~EnvServer() {
    kill(proc_.pid, SIGKILL);
    int st = 0;
    waitpid(proc_.pid, &st, 0);
  }
  const std::string& url() const { return url_; }

 private:
  Proc proc_;
  std::string url_;
};

std::string env_root() {
  static const std::string root = [] {
    const std::string& r = shared_root();
    const RunOut m = ::trinity::test::trinity(
        {"init-model", "--arch", "qwen2", "--hidden", "32", "--layers", "1", "--heads", "2", "--intermediate", "64",
         "--max-pos", "4096", "--tokenizer", "bytes", "--seed", "1", "--out", r + "/env_model"},
        r + "/init_env.log");
    EXPECT_EQ(m.rc, 0) << m.out;
    std::string rows;
    for (int i = 0; i < 16; ++i) rows += "{\"prompt\": \"walk\", \"seed\": " + std::to_string(i) + "}\n";
    write_text(r + "/envdata/train.jsonl", rows);
    return r;
  }();
  return root;
}

// GRPO on env_workflow: 2 tasks x 2 repeats per step, 16-token turns.
std::string env_yaml(const std::string& root, const std::string& name, const std::string& workflow,
                     const std::string& args, int steps = 2, int runners = 4) {
  return "project: t\nname: " + name + "\ncheckpoint_root_dir: " + root + "/ckpt\nmodel:\n  model_path: " + root +
         "/env_model\n  max_prompt_tokens: 600\n  max_response_tokens: 120\n"
         "algorithm:\n  algorithm_type: grpo\n  repeat_times: 2\n  optimizer: {lr: 1e-3}\n"
         "buffer:\n  batch_size: 2\n  total_steps: " +
         std::to_string(steps) + "\n  explorer_input:\n    taskset:\n      name: walk\n      path: " + root +
         "/envdata/train.jsonl\n      format: {prompt_key: prompt}\n      rollout_args: {max_tokens: 120}\n"
         "    default_workflow_type: " +
         workflow + "\n    workflow_args:\n      max_tokens_per_turn: 16\n" + args +
         "explorer:\n  runner_per_model: " + std::to_string(runners) +
         "\n  max_timeout: 60\ntrainer:\n  save_interval: 100\n";
}

RunOut run_env(const std::string& root, const std::string& name, const std::string& yaml,
               std::vector<std::string> sets = {}, double timeout = 240) {
  std::vector<std::string> args = {"run", "--config", write_config(root, name, yaml)};
  for (auto& s : sets) args.push_back("--set"), args.push_back(s);
  return ::trinity::test::trinity(args, root + "/" + name + ".log", timeout);
}

void expect_trained(const std::string& root, const std::string& name, const RunOut& r, int steps = 2) {
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto m = read_metrics(job_dir(root, name));
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/finished_task_count"), 2 * steps) << r.out;
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/failed_task_count"), 0) << r.out;
  ASSERT_TRUE(has_metric(m, "explorer", "rollout/env_steps/mean")) << r.out;
  EXPECT_GE(metric_values(m, "explorer", "rollout/env_steps/mean").at(0), 1) << r.out;
  EXPECT_EQ(metric_steps(m, "trainer", "actor/pg_loss").size(), static_cast<size_t>(steps)) << r.out;
}

}  // namespace

TEST(Envs, OpenEnvWebSocketEpisodesTrain) {
  const std::string root = env_root();
  EnvServer srv(root + "/srv_ws.log", {"--env", "linewalk"});
  const std::string args =
      "      env_url: " + srv.url() + "\n      transport: ws\n      max_steps: 3\n" +
      "      reset_keys: [seed]\n      observation_template: \"{text} ({remaining} steps left)\"\n";
  const RunOut r = run_env(root, "env_ws", env_yaml(root, "env_ws", "env_workflow", args));
  expect_trained(root, "env_ws", r);
}

TEST(Envs, OpenEnvHttpAndStepWise) {
  const std::string root = env_root();
  EnvServer srv(root + "/srv_http.log", {"--env", "linewalk"});
  // OpenEnv's HTTP form keeps one environment on the server: one runner at a time.
  const std::string args =
      "      env_url: " + srv.url() + "\n      transport: http\n      max_steps: 2\n" + "      step_wise: true\n";
  const RunOut r = run_env(root, "env_http", env_yaml(root, "env_http", "env_workflow", args, 2, 1),
                           {"algorithm.algorithm_type=multi_step_grpo"});
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto m = read_metrics(job_dir(root, "env_http"));
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/failed_task_count"), 0) << r.out;
  EXPECT_GE(metric_steps(m, "trainer", "actor/pg_loss").size(), 1u) << r.out;
}

TEST(Envs, AgentGymServerAndAlfworldPreset) {
  const std::string root = env_root();
  EnvServer srv(root + "/srv_gym.log", {"--env", "linewalk", "--protocol", "agentgym"});
  std::string args = "      env_url: " + srv.url() + "\n      transport: agentgym\n      max_steps: 3\n" +
                     "      action_field: action\n";
  RunOut r = run_env(root, "env_gym", env_yaml(root, "env_gym", "env_workflow", args));
  expect_trained(root, "env_gym", r);
  // Trinity's ALFWorld workflow name, pointed at the server by $ALFWORLD_ENV_URL; its task selects the
  // game with a row field ("game" here: the seed column renamed by the row itself).
  std::string rows;
  for (int i = 0; i < 4; ++i) rows += "{\"prompt\": \"walk\", \"game\": " + std::to_string(i) + "}\n";
  write_text(root + "/envdata/alf.jsonl", rows);
  std::string y = env_yaml(root, "env_alf", "alfworld_workflow", "      max_env_steps: 2\n", 1);
  y.replace(y.find(root + "/envdata/train.jsonl"), root.size() + 20, root + "/envdata/alf.jsonl");
  setenv("ALFWORLD_ENV_URL", srv.url().c_str(), 1);
  // Upstream's system prompt is ~1500 byte tokens; two observations of ~130 need more than 120 tokens.
  r = run_env(root, "env_alf", y,
              {"model.max_prompt_tokens=2400", "model.max_response_tokens=400",
               "buffer.explorer_input.taskset.rollout_args.max_tokens=400"});
  unsetenv("ALFWORLD_ENV_URL");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto m = read_metrics(job_dir(root, "env_alf"));
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/finished_task_count"), 2) << r.out;
  // The model never writes <action>: every episode times out at max_env_steps with upstream's -0.1.
  EXPECT_NEAR(metric_values(m, "explorer", "rollout/env_reward/mean").at(0), -0.1, 1e-9) << r.out;
  EXPECT_EQ(metric_values(m, "explorer", "rollout/env_steps/mean").at(0), 2) << r.out;
}

TEST(Envs, FailuresAreCountedByReasonWithoutHanging) {
  const std::string root = env_root();
  struct Case {
    std::string name;
    std::vector<std::string> flags;
    std::string extra, reason;
  };
  for (const Case& c : {Case{"env_die", {"--die-after-steps", "3"}, "", "rollout/failed/env_"},
                        Case{"env_slow", {"--delay", "5"}, "      timeout: 1\n", "rollout/failed/env_timeout"},
                        Case{"env_garbage", {"--malformed-step"}, "", "rollout/failed/env_protocol"}}) {
    EnvServer srv(root + "/srv_" + c.name + ".log", c.flags);
    const std::string args = "      env_url: " + srv.url() + "\n      transport: ws\n      max_steps: 3\n" +
                             "      connect_retries: 0\n" + c.extra;
    const RunOut r =
        run_env(root, c.name, env_yaml(root, c.name, "env_workflow", args, 1), {"explorer.max_retry_times=0"}, 120);
    EXPECT_NE(r.rc, -1) << c.name << " hung\n" << r.out;  // failed steps end the run (rc 1), never a hang
    EXPECT_LT(r.seconds, 60) << c.name;
    const auto m = read_metrics(job_dir(root, c.name));
    double failed = 0;
    for (const auto& row : m)
      for (const auto& [k, v] : row.items())
        if (k.rfind(c.reason, 0) == 0 && v.is_number()) failed += v.get<double>();
    EXPECT_GE(failed, 1) << c.name << "\n" << r.out;
  }
}

TEST(Envs, AnEpisodeThatNeverEndsStopsAtMaxSteps) {
  const std::string root = env_root();
  EnvServer srv(root + "/srv_never.log", {"--never-done"});
  const std::string args = "      env_url: " + srv.url() + "\n      max_steps: 2\n";
  const RunOut r = run_env(root, "env_never", env_yaml(root, "env_never", "env_workflow", args, 1));
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto m = read_metrics(job_dir(root, "env_never"));
  EXPECT_LE(metric_values(m, "explorer", "rollout/env_steps/mean").at(0), 2) << r.out;
}

TEST(Envs, ToolEnvironmentWithToolCallActions) {
  const std::string root = env_root();
  EnvServer srv(root + "/srv_calc.log", {"--env", "calc"});
  const std::string args = "      env_url: " + srv.url() + "\n      action_format: tool_call\n      max_steps: 2\n" +
                           "      reset_keys: [seed]\n";
  const RunOut r = run_env(root, "env_calc", env_yaml(root, "env_calc", "env_workflow", args, 1));
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto m = read_metrics(job_dir(root, "env_calc"));
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/finished_task_count"), 2) << r.out;
  // The random model writes no tool call: every action is invalid and the episode runs to max_steps.
  EXPECT_EQ(metric_values(m, "explorer", "rollout/invalid_actions/mean").at(0), 2) << r.out;
  EXPECT_EQ(metric_values(m, "explorer", "rollout/env_steps/mean").at(0), 2) << r.out;
}
