// Several explorer processes sharing one taskset (issue 17 §2), end to end with the real binary, on
// a sqlite buffer and on a PostgreSQL one (a real server, tests/common/pg_server.h): one trainer
// process and two explorers (explorer.name e1, e2) through the buffer's explore-step leases, plus a
// "ghost" lease on step 1 (an explorer that died holding it, made by the test). e1 is killed with
// SIGKILL right after it claims its first step; e2 takes the ghost's step over when its lease expires. A
// "gate" lease holds the later steps until the trainer's first weights are out. The run
// must end with every explore step's experiences in the buffer exactly once and every one of them
// trained: the planned number of train steps, nothing left over.
#include <algorithm>
#include <set>

#include "buffer/config.h"
#include "buffer/step_claims.h"
#include "buffer/storage.h"
#include "common/pg_server.h"
#include "core/error.h"
#include "launcher/e2e_util.h"

namespace trinity::test {
namespace {

constexpr int kSteps = 10, kBatch = 2, kRepeat = 2;  // 40 experiences, 10 train steps of 4

const std::string& root() {
  return shared_root();
}

std::string config(const std::string& name, const std::string& url) {
  std::string y = base_yaml(root(), name);
  auto cut = [&](const std::string& from, const std::string& to) {
    const size_t a = y.find(from), b = y.find(to, a);
    y.erase(a, b - a);
  };
  cut("    eval_tasksets:", "    default_workflow_type");  // no evaluation: the counts are what matter
  y.insert(y.find("explorer:\n"),
           strcat("  trainer_input:\n    experience_buffer:\n      name: exp_", name, "\n      storage_type: sql\n",
                  "      path: '", url, "'\n      lease_timeout: 3\n      max_read_timeout: 120\n"));
  return write_config(root(), name, y);
}

buffer::StorageConfig storage(const std::string& name, const std::string& url) {
  buffer::StorageConfig c;
  c.name = "exp_" + name;
  c.storage_type = "sql";
  c.path = url;
  return c;
}

std::vector<std::string> args(const std::string& cfg, const std::vector<std::string>& sets) {
  std::vector<std::string> a = {trinity_bin(), "run",
                                "--config",    cfg,
                                "--set",       strcat("buffer.total_steps=", kSteps),
                                "--set",       "explorer.runner_per_model=1",
                                "--set",       "model.max_response_tokens=24",
                                "--set",       "model.max_prompt_tokens=30"};
  for (const auto& s : sets) a.insert(a.end(), {"--set", s});
  return a;
}

class Explorers : public ::testing::TestWithParam<std::string> {};

TEST_P(Explorers, TwoExplorersOneDiesEveryStepTrainedOnce) {
  const bool pg = GetParam() == "postgresql";
  const std::string name = "explorers_" + GetParam();
  const std::string url = pg ? pg_server().url() : "sqlite:///" + root() + "/" + name + ".db";
  const std::string cfg = config(name, url);
  // An explorer that died holding step 1: its lease (3 s) is in the table and is never renewed.
  auto claims = buffer::open_step_claims(storage(name, url));
  ASSERT_EQ(claims->claim("ghost", kSteps, 3.0), 1);
  // A "gate" (owners gate2, gate3, ...) holds steps 2..kSteps with a long lease until the trainer has published weights
  // trained on step 1; the test then expires it, so the explorers take those steps over and must explore them with
  // trained weights (explorers never wait for the trainer: without the gate, a fast explorer could finish every step
  // before the trainer's first version exists).
  for (int k = 2; k <= kSteps; ++k) ASSERT_EQ(claims->claim(strcat("gate", k), kSteps, 600.0), k);
  Proc trainer = spawn(args(cfg, {"mode=train"}), root() + "/" + name + "_trainer.log");
  setenv("TRINITY_LOG_LEVEL", "debug", 1);  // e1 logs each step it claims
  Proc e1 = spawn(args(cfg, {"mode=explore", "explorer.name=e1"}), root() + "/" + name + "_e1.log");
  unsetenv("TRINITY_LOG_LEVEL");
  // Kill e1 right after it claimed its first step (mid-step or just after: either way nothing may be
  // lost or doubled), then start e2.
  const bool claimed = wait_for([&] { return slurp(e1.log).find("e1: exploring step") != std::string::npos; }, 60);
  ASSERT_TRUE(claimed) << slurp(e1.log);
  kill(e1.pid, SIGKILL);
  Proc e2 = spawn(args(cfg, {"mode=explore", "explorer.name=e2"}), root() + "/" + name + "_e2.log");
  EXPECT_EQ(wait_exit(e1, 10), 128 + SIGKILL);
  const std::string latest = job_dir(root(), name) + "/latest_state_dict_iteration.txt";
  const bool trained = wait_for([&] { return std::atoll(slurp(latest).c_str()) >= 1; }, 150);
  ASSERT_TRUE(trained) << slurp(trainer.log) << slurp(e2.log);
  for (int k = 2; k <= kSteps; ++k) ASSERT_TRUE(claims->renew(k, strcat("gate", k), 0.0)) << k;  // expire the gate
  const int rc2 = wait_exit(e2, 180);
  const std::string out2 = slurp(e2.log);
  ASSERT_EQ(rc2, 0) << out2;
  const int rct = wait_exit(trainer, 180);
  const std::string outt = slurp(trainer.log);
  ASSERT_EQ(rct, 0) << outt;
  // The ghost's step was taken over when its lease expired: by e2, or by e1 when e1 took longer than
  // the 3 s lease to start (a slow machine) and claimed it first.
  const std::string ghost = "exploring step 1 again: the lease of explorer 'ghost' expired";
  EXPECT_TRUE(out2.find(ghost) != std::string::npos || slurp(e1.log).find(ghost) != std::string::npos) << out2;
  const bool e1_step = out2.find("the lease of explorer 'e1' expired") != std::string::npos ||
                       out2.find("of e1 is already in the buffer") != std::string::npos;
  std::printf("e1 died %s\n", e1_step ? "holding a step, which e2 took over" : "after finishing its step");

  // Exactly the planned experiences, each (step, task, run) once, all trained.
  auto s = buffer::open_storage(storage(name, url));
  const auto st = s->stats();
  EXPECT_EQ(st.total, kSteps * kBatch * kRepeat);
  EXPECT_EQ(st.consumed, kSteps * kBatch * kRepeat) << "every experience trained";
  std::set<std::string> keys;
  for (const auto& e : s->scan(0, 1000)) keys.insert(strcat(e.eid.batch, "/", e.eid.task, "/", e.eid.run));
  EXPECT_EQ(static_cast<int>(keys.size()), kSteps * kBatch * kRepeat);
  for (int k = 1; k <= kSteps; ++k)
    for (int t = 0; t < kBatch; ++t)
      for (int r = 0; r < kRepeat; ++r) EXPECT_TRUE(keys.count(strcat(k, "/", t, "/", r))) << k << "/" << t << "/" << r;
  const auto m = read_metrics(job_dir(root(), name));
  EXPECT_EQ(metric_steps(m, "trainer", "actor/pg_loss").size(), static_cast<size_t>(kSteps)) << outt;
  // Each explore step logged once, by whichever explorer ran it; a step whose explorer died after
  // writing its experiences but before logging it (e2 then found it "already in the buffer") has no
  // metrics line: its data is not lost, its rollout metrics are.
  auto steps = metric_steps(m, "explorer", "rollout/finished_task_count");
  std::sort(steps.begin(), steps.end());
  std::vector<int64_t> want;
  for (int k = 1; k <= kSteps; ++k)
    if (std::find(steps.begin(), steps.end(), k) != steps.end() ||
        out2.find(strcat("explore step ", k, " of e1 is already in the buffer")) == std::string::npos)
      want.push_back(k);
  EXPECT_EQ(steps, want);
  // The trainer's weights reached the explorers (checkpoint sync through the job directory): an explorer
  // takes the newest published version before each step, so every gated step ran on trained weights.
  const auto versions = metric_values(m, "explorer", "rollout/model_version");
  const auto vsteps = metric_steps(m, "explorer", "rollout/model_version");
  ASSERT_EQ(versions.size(), vsteps.size());
  for (size_t i = 0; i < vsteps.size(); ++i)
    if (vsteps[i] >= 2) {
      EXPECT_GE(versions[i], 1.0) << "explore step " << vsteps[i];
    }
  EXPECT_TRUE(std::find(vsteps.begin(), vsteps.end(), kSteps) != vsteps.end());
}

INSTANTIATE_TEST_SUITE_P(Buffers, Explorers, ::testing::Values("sqlite", "postgresql"));

TEST(ExplorersConfig, SharedStepsNeedADatabaseBuffer) {
  std::string y = base_yaml(root(), "explorers_file");
  y.insert(y.find("explorer:\n"),
           "  trainer_input:\n    experience_buffer:\n      name: x\n      storage_type: file\n"
           "      path: '" +
               root() + "/x.jsonl'\n");
  const RunOut r = trinity({"run", "--config", write_config(root(), "explorers_file", y), "--set", "mode=explore",
                            "--set", "explorer.name=e1"},
                           root() + "/explorers_file.log");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("storage_type must be sql"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace trinity::test
