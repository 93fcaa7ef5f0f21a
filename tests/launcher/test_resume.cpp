// Resume of a `both` GRPO run with the real binary:
//  (a) SIGINT mid-run: exit 130 with a checkpoint; rerunning trains exactly the remaining steps and
//      the explorer continues from its saved step (explorer_meta.json), not from 0.
//  (b) kill -9 mid-run with a sqlite buffer and save_interval 2: the rerun completes; afterwards every
//      experience row was consumed exactly once, no (explore step, task) group was written twice, and
//      the trainer's last step is the planned count.
// Both: the resumed run is as on-policy as one that never stopped (explore step s on version s - 1,
// train step t on explore step t's experiences), and metrics.jsonl has no superseded duplicates.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "launcher/e2e_util.h"

namespace trinity::test {
namespace {

constexpr int kSteps = 30;  // explore steps = train steps (2 tasks x 2 runs per train batch)

// Waits until the trainer logged `n` steps (pg_loss lines) or the process ended; false on deadline.
bool wait_trainer_steps(const Proc& p, const std::string& job, size_t n, double timeout_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    if (fs::exists(job + "/monitor/metrics.jsonl")) {
      size_t k = 0;
      std::ifstream in(job + "/monitor/metrics.jsonl");
      std::string line;
      while (std::getline(in, line))
        if (line.find("\"role\":\"trainer\"") != std::string::npos && line.find("actor/pg_loss") != std::string::npos) ++k;
      if (k >= n) return true;
    }
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(p.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0)
      return false;  // exited (still reapable by wait_exit)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

int64_t read_int(const std::string& path) { return std::stoll(slurp(path)); }

// Output of `sqlite3 -separator ' ' db sql` (deadline via timeout(1)).
std::string sql(const std::string& db, const std::string& query) {
  const std::string cmd = "timeout 20 sqlite3 -separator ' ' '" + db + "' \"" + query + "\"";
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return "popen failed";
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  pclose(f);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// After a resume, metrics.jsonl holds each (role, step, metric) once: the rerun dropped what the
// killed run had logged for the steps it logged again.
void expect_no_duplicate_metrics(const std::vector<json>& m) {
  std::map<std::tuple<std::string, int64_t, std::string>, int> seen;
  int dups = 0;
  std::string examples;
  for (const auto& j : m)
    for (const auto& [k, v] : j.items()) {
      if (k == "role" || k == "step" || k == "time") continue;
      if (++seen[{j.value("role", ""), j.value("step", int64_t{-1}), k}] == 2 && ++dups <= 5)
        examples += " " + j.value("role", "") + "/" + std::to_string(j.value("step", int64_t{-1})) + "/" + k;
    }
  EXPECT_EQ(dups, 0) << "duplicate (role, step, metric) rows in metrics.jsonl:" << examples;
}

// sync_interval 1, sync_offset 0: explore step s runs on weights version s - 1 and train step t
// trains on the experiences of explore step t (version t - 1), resumed or not.
void expect_on_policy(const std::vector<json>& m) {
  int explorer_rows = 0, trainer_rows = 0;
  for (const auto& j : m) {
    const int64_t step = j.value("step", int64_t{-1});
    if (j.value("role", "") == "explorer" && j.contains("rollout/model_version")) {
      ++explorer_rows;
      EXPECT_EQ(j["rollout/model_version"].get<double>(), static_cast<double>(step - 1)) << "explore step " << step;
    }
    if (j.value("role", "") == "trainer" && j.contains("sample/model_version/min")) {
      ++trainer_rows;
      EXPECT_EQ(j["sample/model_version/min"].get<double>(), static_cast<double>(step - 1)) << "train step " << step;
      EXPECT_EQ(j["sample/model_version/max"].get<double>(), static_cast<double>(step - 1)) << "train step " << step;
    }
  }
  EXPECT_EQ(explorer_rows, kSteps);
  EXPECT_EQ(trainer_rows, kSteps);
}

std::vector<std::string> run_args(const std::string& cfg, const std::vector<std::string>& extra) {
  std::vector<std::string> a = {trinity_bin(), "run", "--config", cfg, "--set", "buffer.total_steps=" + std::to_string(kSteps),
                                "--set", "explorer.eval_interval=10"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// exact_steps: the rerun trains exactly t1+1 .. kSteps. The explorer saves its state after each
// step's experiences are written (not only at the end of a sync point), so a stop between the write
// and the save cannot make it explore (and the trainer train) a step twice.
void sigint_and_resume(const std::string& name, bool exact_steps) {
  const std::string& root = shared_root();
  const std::string cfg = write_config(root, name, base_yaml(root, name));
  const std::string job = job_dir(root, name);
  fs::remove_all(job);
  const auto args = run_args(cfg, {"--set", "trainer.save_interval=10"});
  Proc p = spawn(args, root + "/sigint1.log");
  ASSERT_TRUE(wait_trainer_steps(p, job, 5, 60)) << slurp(p.log);
  kill(p.pid, SIGINT);
  const int rc = wait_exit(p, 60);
  ASSERT_EQ(rc, 130) << slurp(p.log);
  ASSERT_TRUE(fs::exists(job + "/latest_checkpointed_iteration.txt")) << slurp(p.log);
  const int64_t t1 = read_int(job + "/latest_checkpointed_iteration.txt");
  EXPECT_GE(t1, 5);
  ASSERT_LT(t1, kSteps) << "the run ended before the signal; nothing to resume";
  EXPECT_TRUE(fs::exists(job + "/global_step_" + std::to_string(t1) + "/huggingface/config.json"));
  const auto m1 = read_metrics(job);
  EXPECT_EQ(metric_steps(m1, "trainer", "actor/pg_loss").back(), t1) << "the stop checkpoint is the last trained step";
  const json meta = json::parse(slurp(job + "/explorer_meta.json"));
  const int64_t e1 = meta.at("latest_iteration").get<int64_t>();
  EXPECT_GE(e1, t1 - 1);

  const double t_rerun = unix_now();
  Proc p2 = spawn(run_args(cfg, {"--set", "trainer.save_interval=10"}), root + "/sigint2.log");
  const int rc2 = wait_exit(p2, 90);
  const std::string out2 = slurp(p2.log);
  ASSERT_EQ(rc2, 0) << out2;
  EXPECT_NE(out2.find("resumed at step " + std::to_string(e1)), std::string::npos) << out2;
  const auto m = read_metrics(job);
  std::vector<json> m2;  // the rerun's lines
  for (const auto& j : m)
    if (j.value("time", 0.0) >= t_rerun) m2.push_back(j);
  expect_no_duplicate_metrics(m);
  expect_on_policy(m);
  // The trainer trains t1+1 .. kSteps, exactly once each.
  const auto tsteps = metric_steps(m2, "trainer", "actor/pg_loss");
  ASSERT_FALSE(tsteps.empty());
  EXPECT_EQ(tsteps.front(), t1 + 1) << "the trainer continues after its checkpoint";
  for (size_t i = 1; i < tsteps.size(); ++i) EXPECT_EQ(tsteps[i], tsteps[i - 1] + 1);
  if (exact_steps) {
    EXPECT_EQ(tsteps.back(), kSteps) << out2;
    EXPECT_EQ(read_int(job + "/latest_checkpointed_iteration.txt"), kSteps);
  } else {
    EXPECT_GE(tsteps.back(), kSteps) << out2;
    EXPECT_LE(tsteps.back(), kSteps + 1) << out2;
  }
  // The explorer continues after its saved step.
  const auto esteps = metric_steps(m2, "explorer", "rollout/finished_task_count");
  ASSERT_FALSE(esteps.empty());
  EXPECT_EQ(esteps.front(), e1 + 1) << out2;
  EXPECT_EQ(esteps.back(), kSteps);
}

// kill -9 once the trainer logged `kill_after` steps, rerun, check the buffer and the trainer.
// expect_no_redo: also require that no explore step was written twice. A kill between the write of
// a step and the save of explorer_meta.json makes the rerun explore that step again; its uids are
// derived from the task seed, so the sqlite buffer ignores the copies instead of storing them.
void kill_and_resume(const std::string& name, size_t kill_after, bool expect_no_redo) {
  const std::string& root = shared_root();
  const std::string cfg = write_config(root, name, base_yaml(root, name));
  const std::string job = job_dir(root, name);
  fs::remove_all(job);
  const std::vector<std::string> extra = {"--set", "trainer.save_interval=2", "--set",
                                          "buffer.trainer_input.experience_buffer.storage_type=sql"};
  Proc p = spawn(run_args(cfg, extra), root + "/kill1.log");
  ASSERT_TRUE(wait_trainer_steps(p, job, kill_after, 60)) << slurp(p.log);
  kill(p.pid, SIGKILL);
  ASSERT_EQ(wait_exit(p, 30), 128 + SIGKILL);
  if (fs::exists(job + "/latest_checkpointed_iteration.txt")) {
    ASSERT_LT(read_int(job + "/latest_checkpointed_iteration.txt"), kSteps);
  }

  Proc p2 = spawn(run_args(cfg, extra), root + "/kill2.log");
  const int rc2 = wait_exit(p2, 90);
  const std::string out2 = slurp(p2.log);
  ASSERT_EQ(rc2, 0) << out2;
  const auto m = read_metrics(job);
  const auto tsteps = metric_steps(m, "trainer", "actor/pg_loss");
  ASSERT_FALSE(tsteps.empty());
  expect_no_duplicate_metrics(m);
  if (expect_no_redo) expect_on_policy(m);
  // No temporary file of the killed run is left behind.
  for (const auto& e : fs::recursive_directory_iterator(job))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  const std::string db = job + "/buffer/experience_buffer.db";
  ASSERT_TRUE(fs::exists(db)) << out2;
  const std::string t = "experience_buffer";
  const int64_t rows = std::stoll(sql(db, "SELECT count(*) FROM " + t));
  const int64_t groups = std::stoll(sql(db, "SELECT count(DISTINCT task_id) FROM " + t));
  EXPECT_EQ(groups, kSteps * 2) << "every (explore step, task) group is stored";
  EXPECT_EQ(rows % 4, 0);
  // Every stored row trained once: the final train step is rows / 4 (kSteps unless a step was redone).
  EXPECT_EQ(read_int(job + "/latest_checkpointed_iteration.txt"), rows / 4) << out2;
  EXPECT_EQ(tsteps.back(), rows / 4);
  if (expect_no_redo) {
    // Every explore step's 2 tasks x 2 runs written once: kSteps * 4 rows, 2 per (step, task) group.
    EXPECT_EQ(rows, kSteps * 4);
    EXPECT_EQ(sql(db, "SELECT task_id, count(*) FROM " + t + " GROUP BY task_id HAVING count(*) != 2"), "")
        << "an explore step was written twice (redone after the kill)";
  }
  // Consumed exactly once each, nothing left leased or ready.
  EXPECT_EQ(sql(db, "SELECT status, consumed, count(*) FROM " + t + " GROUP BY status, consumed"),
            "3 1 " + std::to_string(rows));
}

TEST(LauncherResume, SigintThenRerunResumesBothSides) { sigint_and_resume("sigint", true); }

// A second SIGINT run with a different timing (the stop lands elsewhere in the step).
TEST(LauncherResume, SigintThenRerunTrainsExactlyThePlannedSteps) { sigint_and_resume("sigint_exact", true); }

TEST(LauncherResume, KillNineWithSqliteBufferConsumesEveryExperienceOnce) { kill_and_resume("kill9", 7, true); }

// Killed before the trainer's first checkpoint: its leases must not block the rerun (they were held
// for lease_timeout = 600 s, the rerun hung).
TEST(LauncherResume, KillNineBeforeTheFirstCheckpoint) { kill_and_resume("kill9_early", 1, true); }

// The kill right after the first trainer step often lands in the explorer's write -> save window.
TEST(LauncherResume, KillNineDoesNotRedoAWrittenExploreStep) { kill_and_resume("kill9_redo", 1, true); }

}  // namespace
}  // namespace trinity::test
