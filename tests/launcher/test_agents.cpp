// command_workflow end to end with the real binary: Python agents (standard library only) talk to
// the per-run endpoint over HTTP; the run trains on the recorded calls. Also the failure contract:
// an agent that hangs (timeout, process group killed, no process left), exits 1, prints no reward,
// or floods stdout; and a key from another run is refused.
#include <signal.h>

#include "e2e_util.h"

using namespace trinity::test;

namespace {

// One agent script, behaviour chosen by AGENT_MODE: ok (two consistent turns), rewrite (the second
// turn resends a rewritten conversation), hang, exit1, noreward, flood, stealkey.
const char* kAgent = R"PY(
import json, os, sys, time, urllib.request, urllib.error
task = json.loads(os.environ["TRINITY_TASK"])
assert json.loads(sys.stdin.readline()) == task, "stdin differs from TRINITY_TASK"
for k in ("TRINITY_RUN_ID", "TRINITY_REPEAT_INDEX", "TRINITY_SEED", "TRINITY_MODEL"):
    assert k in os.environ, k
mode = os.environ.get("AGENT_MODE", "ok")
base, key = os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"]

def chat(messages, k=key):
    body = json.dumps({"model": "my-agent-model", "messages": messages}).encode()
    req = urllib.request.Request(base + "/chat/completions", data=body,
                                 headers={"Authorization": "Bearer " + k, "Content-Type": "application/json"})
    try:
        return json.load(urllib.request.urlopen(req, timeout=60))
    except urllib.error.HTTPError as e:
        print("HTTP", e.code, e.read().decode(), file=sys.stderr)
        raise

if mode == "hang":
    with open(os.environ["PID_FILE"] + "." + os.environ["TRINITY_REPEAT_INDEX"], "w") as f:
        f.write(str(os.getpid()))
    time.sleep(300)
if mode == "exit1":
    print("agent: giving up", file=sys.stderr)
    sys.exit(1)
if mode == "stealkey":
    try:
        chat([{"role": "user", "content": "x"}], k="trinity-run-0000")
        print("accepted a foreign key", file=sys.stderr)
        sys.exit(3)
    except urllib.error.HTTPError as e:
        assert e.code == 401, e.code
msgs = [{"role": "user", "content": task["prompt"]}]
r = chat(msgs)
msgs.append(r["choices"][0]["message"])
msgs.append({"role": "user", "content": "Check it."})
if mode == "rewrite":
    msgs = [{"role": "user", "content": "Summary: " + task["prompt"]}]
r2 = chat(msgs)
print("agent: two turns done")
if mode == "flood":
    sys.stdout.write(("x" * 1023 + "\n") * 30000)  # 30 MiB
    sys.stdout.flush()
if mode == "noreward":
    sys.exit(0)
turns = 2
print(json.dumps({"reward": float(len(r2["choices"][0]["message"]["content"]) % 2), "metrics": {"turns": turns},
                  "info": {"mode": mode}}))
)PY";

std::string agent_yaml(const std::string& root, const std::string& name, const std::string& mode,
                       const std::string& extra_args = "") {
  std::string y = base_yaml(root, name);
  const auto at = y.find("    eval_tasksets:");
  const auto end = y.find("    default_workflow_type:");
  y.replace(at, end - at, "");
  const std::string wf = "    default_workflow_type: arithmetic_workflow\n";
  y.replace(y.find(wf), wf.size(),
            "    default_workflow_type: command_workflow\n"
            "    workflow_args:\n"
            "      command: [\"python3\", \"agents/agent.py\"]\n"
            "      env: {AGENT_MODE: \"" +
                mode + "\", PID_FILE: \"" + root + "/" + name + ".pid\"}\n" + extra_args);
  y.replace(y.find("  total_steps: 4"), 16, "  total_steps: 2");
  // Multi-turn conversations need more context than the shared model's 64 positions.
  y.replace(y.find(root + "/model\n"), root.size() + 7, root + "/agent_model\n");
  y.replace(y.find("  max_prompt_tokens: 24"), 23, "  max_prompt_tokens: 200");
  return y;
}

std::string agents_root() {
  static const std::string root = [] {
    const std::string& r = shared_root();
    write_text(r + "/agents/agent.py", kAgent);
    const RunOut m = ::trinity::test::trinity(
        {"init-model", "--arch", "qwen2", "--hidden", "32", "--layers", "1", "--heads", "2", "--intermediate", "64",
         "--max-pos", "4096", "--tokenizer", "bytes", "--seed", "1", "--out", r + "/agent_model"},
        r + "/init_agent.log");
    EXPECT_EQ(m.rc, 0) << m.out;
    return r;
  }();
  return root;
}

bool process_alive(pid_t pid) {
  return kill(pid, 0) == 0;
}

}  // namespace

TEST(Agents, ConsistentTwoTurnAgentTrains) {
  const std::string root = agents_root();
  const std::string cfg = write_config(root, "agent_ok", agent_yaml(root, "agent_ok", "ok"));
  const RunOut r = ::trinity::test::trinity({"run", "--config", cfg}, root + "/agent_ok.log", 240);
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto m = read_metrics(job_dir(root, "agent_ok"));
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/finished_task_count"), 4);
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/failed_task_count"), 0);
  ASSERT_TRUE(has_metric(m, "explorer", "rollout/agent/inconsistent_history_count")) << r.out;
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/agent/inconsistent_history_count"), 0);
  EXPECT_EQ(metric_values(m, "explorer", "rollout/turns/mean").at(0), 2);
  EXPECT_EQ(metric_values(m, "explorer", "rollout/agent/calls/mean").at(0), 2);
  EXPECT_EQ(metric_steps(m, "trainer", "actor/pg_loss").size(), 2u) << r.out;
  // The agent's other stdout lines are in its run log.
  const std::string log = slurp(job_dir(root, "agent_ok") + "/log/agents/1-0-0.log");
  EXPECT_NE(log.find("agent: two turns done"), std::string::npos) << log;
}

TEST(Agents, RewrittenHistoryIsCountedAndStillTrains) {
  const std::string root = agents_root();
  const std::string cfg = write_config(root, "agent_rw", agent_yaml(root, "agent_rw", "rewrite"));
  const RunOut r = ::trinity::test::trinity({"run", "--config", cfg}, root + "/agent_rw.log", 240);
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto m = read_metrics(job_dir(root, "agent_rw"));
  // 2 steps x 2 tasks x 2 runs, one inconsistent call each.
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/agent/inconsistent_history_count"), 8);
  // Two experiences per run (eid.step 0 and 1): twice the experiences, twice the train steps.
  EXPECT_EQ(metric_steps(m, "trainer", "actor/pg_loss").size(), 4u) << r.out;
}

TEST(Agents, HangingAgentIsKilledWithItsProcessGroup) {
  const std::string root = agents_root();
  const std::string cfg =
      // 8 s: the agent must have started (and written its pid) before the timeout, even when python3
      // is a slow version-manager shim on a loaded machine.
      write_config(root, "agent_hang", agent_yaml(root, "agent_hang", "hang", "      timeout: 8\n"));
  const RunOut r = ::trinity::test::trinity(
      {"run", "--config", cfg, "--set", "explorer.max_retry_times=0", "--set", "buffer.total_steps=1"},
      root + "/agent_hang.log", 120);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("agent_timeout"), std::string::npos) << r.out;
  EXPECT_LT(r.seconds, 60) << r.out;
  int checked = 0;
  for (const char* i : {"0", "1"}) {
    const std::string pid_text = slurp(root + "/agent_hang.pid." + i);
    if (pid_text.empty()) continue;
    ++checked;
    EXPECT_FALSE(process_alive(static_cast<pid_t>(std::stol(pid_text)))) << "agent process " << pid_text << " survived";
  }
  EXPECT_GT(checked, 0) << r.out;
}

TEST(Agents, FailuresAreCountedByReason) {
  const std::string root = agents_root();
  for (const std::string mode : {"exit1", "noreward"}) {
    const std::string name = "agent_" + mode;
    const std::string cfg = write_config(root, name, agent_yaml(root, name, mode));
    const RunOut r = ::trinity::test::trinity(
        {"run", "--config", cfg, "--set", "explorer.max_retry_times=1", "--set", "buffer.total_steps=1"},
        root + "/" + name + ".log", 120);
    EXPECT_EQ(r.rc, 1) << r.out;
    const std::string cls = mode == "exit1" ? "agent_exit" : "agent_no_reward";
    EXPECT_NE(r.out.find(cls), std::string::npos) << r.out;
    if (mode == "exit1") {
      EXPECT_NE(r.out.find("agent: giving up"), std::string::npos) << "stderr tail not quoted\n" << r.out;
    }
    const auto m = read_metrics(job_dir(root, name));
    EXPECT_EQ(metric_sum(m, "explorer", "rollout/failed/" + cls), 2) << r.out;
  }
}

TEST(Agents, FloodingAgentIsBoundedAndForeignKeysAreRefused) {
  const std::string root = agents_root();
  for (const std::string mode : {"flood", "stealkey"}) {
    const std::string name = "agent_" + mode;
    const std::string cfg = write_config(root, name, agent_yaml(root, name, mode));
    const RunOut r = ::trinity::test::trinity({"run", "--config", cfg, "--set", "buffer.total_steps=1"},
                                              root + "/" + name + ".log", 180);
    ASSERT_EQ(r.rc, 0) << r.out;
    const auto m = read_metrics(job_dir(root, name));
    EXPECT_EQ(metric_sum(m, "explorer", "rollout/finished_task_count"), 2) << r.out;
  }
  const auto size = std::filesystem::file_size(job_dir(root, "agent_flood") + "/log/agents/1-0-0.log");
  EXPECT_LE(size, (16u << 20) + 4096);
  EXPECT_GE(size, 15u << 20);
}

// The shipped examples (examples/agents): the standard-library Python agent and the Node agent with the
// official `openai` client, on the example's own data generator and config, with the tiny model (whose
// answers are noise: the reward is ~0, but every run must complete and train).
TEST(Agents, ShippedExampleAgentsRun) {
  const std::string root = agents_root();
  const std::string ex = std::string(TRINITY_SOURCE_DIR) + "/examples/agents";
  const std::string data = root + "/calc";
  ASSERT_EQ(
      std::system(
          ("python3 '" + ex + "/make_calc_tasks.py' --out '" + data + "' --train 8 --eval 2 > /dev/null").c_str()),
      0);
  for (const std::string which : {"calc_agent.yaml", "calc_agent_node.yaml"}) {
    // The example config, pointed at the tiny model and this data, run for one step.
    std::string y = slurp(ex + "/" + which);
    auto set = [&](const std::string& from, const std::string& to) {
      const auto at = y.find(from);
      ASSERT_NE(at, std::string::npos) << from;
      y.replace(at, from.size(), to);
    };
    set("path: data/calc_train.jsonl", "path: " + data + "/calc_train.jsonl");
    set("path: data/calc_eval.jsonl", "path: " + data + "/calc_eval.jsonl");
    const std::string cfg = ex + "/.test-" + which;  // beside the agent scripts: commands run in its directory
    write_text(cfg, y);
    const std::string name = which.substr(0, which.find('.'));
    const RunOut r = ::trinity::test::trinity({"run",
                                               "--config",
                                               cfg,
                                               "--set",
                                               "model.model_path=" + root + "/agent_model",
                                               "--set",
                                               "checkpoint_root_dir=" + root + "/ckpt",
                                               "--set",
                                               "name=" + name,
                                               "--set",
                                               "buffer.total_steps=1",
                                               "--set",
                                               "buffer.batch_size=2",
                                               "--set",
                                               "algorithm.repeat_times=2",
                                               "--set",
                                               "model.max_response_tokens=16",
                                               "--set",
                                               "explorer.eval_on_startup=false",
                                               "--set",
                                               "explorer.max_retry_times=0",
                                               "--set",
                                               "monitor.monitor_type=jsonl",
                                               "--set",
                                               "buffer.explorer_input.workflow_args.env.NODE_PATH=" +
                                                   std::string(TRINITY_SOURCE_DIR) + "/tests/js/node_modules"},
                                              root + "/" + name + ".log", 300);
    std::filesystem::remove(cfg);
    ASSERT_EQ(r.rc, 0) << which << "\n" << r.out;
    const auto m = read_metrics(root + "/ckpt/agents/" + name);
    EXPECT_EQ(metric_sum(m, "explorer", "rollout/finished_task_count"), 2) << r.out;
    EXPECT_TRUE(has_metric(m, "explorer", "rollout/turns/mean")) << r.out;
  }
}
