// `trinity run` end to end with the real binary, one test per mode (both GRPO / PPO, train SFT
// plaintext + messages, train DPO, explore + train as two processes over a sqlite buffer with
// checkpoint sync, bench, multi-stage SFT -> GRPO with stage skipping on rerun), peer failures
// (a missing explorer or trainer is a clear error within the deadline, never a hang) and bad configs.
// Tiny model (1 layer, hidden 32), 2 tasks x 2 repeats per step, 4 steps: each run is ~1 s.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <thread>
#include <csignal>
#include <chrono>

#include "buffer/storage.h"
#include "common/pg_server.h"
#include "launcher/e2e_util.h"
#include "model/transformer.h"

namespace trinity::test {
namespace {

std::string root() { return shared_root(); }

int count_lines_with(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line))
    if (line.find(needle) != std::string::npos) ++n;
  return n;
}

std::vector<std::string> files_under(const std::string& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(e.path().string());
  return out;
}

TEST(LauncherModes, BothGrpoLogsTrainsEvaluatesAndSaves) {
  const std::string name = "both_grpo";
  const std::string cfg = write_config(root(), name, base_yaml(root(), name));
  const RunOut r = trinity({"run", "--config", cfg}, root() + "/" + name + ".log");
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::string job = job_dir(root(), name);
  const auto m = read_metrics(job);
  for (const char* k : {"rollout/accuracy/mean", "rollout/finished_task_count", "rollout/model_version"})
    EXPECT_TRUE(has_metric(m, "explorer", k)) << k;
  for (const char* k : {"actor/pg_loss", "actor/grad_norm", "actor/lr"}) EXPECT_TRUE(has_metric(m, "trainer", k)) << k;
  EXPECT_EQ(metric_steps(m, "trainer", "actor/pg_loss"), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/finished_task_count"), 8.0);
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/failed_task_count"), 0.0);
  // Eval at startup, every 2 steps: versions 0, 2, 4.
  EXPECT_EQ(metric_steps(m, "explorer", "eval/arith_eval/accuracy/mean@1"), (std::vector<int64_t>{0, 2, 4}));
  for (int s : {2, 4}) {
    const std::string hf = job + "/global_step_" + std::to_string(s) + "/huggingface";
    ASSERT_TRUE(fs::exists(hf + "/config.json")) << hf;
    EXPECT_NO_THROW(model::Transformer::load(hf)) << hf;
  }
  for (const char* role : {"explorer", "trainer"}) {
    const auto files = files_under(job + "/monitor/tensorboard/" + role);
    ASSERT_FALSE(files.empty()) << role;
    EXPECT_NE(files[0].find("events.out.tfevents"), std::string::npos) << files[0];
    EXPECT_GT(fs::file_size(files[0]), 100u) << files[0];
  }
  EXPECT_NE(r.out.find("4 train steps, 4 explore steps"), std::string::npos) << r.out;
}

TEST(LauncherModes, BothPpoTrainsTheCritic) {
  const std::string name = "both_ppo";
  const std::string cfg = write_config(root(), name, base_yaml(root(), name));
  const RunOut r = trinity({"run", "--config", cfg, "--set", "algorithm.algorithm_type=ppo", "--set",
                            "algorithm.repeat_times=1", "--set", "buffer.batch_size=4", "--set", "buffer.total_steps=2"},
                           root() + "/" + name + ".log");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto m = read_metrics(job_dir(root(), name));
  EXPECT_EQ(metric_steps(m, "trainer", "critic/vf_loss"), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(has_metric(m, "trainer", "actor/pg_loss"));
  for (double v : metric_values(m, "trainer", "critic/vf_loss")) EXPECT_TRUE(std::isfinite(v));
}

// synchronizer.sync_interval 2 / sync_offset 1 (trinity-rft.md §6.3): the explorer runs one step ahead;
// sync points are explore steps 3 and 5, where it waits for the weights the data of steps 2 and 4 make
// (versions 2 and 4). Steps 1-3 are explored with v0, 4-5 with v2, 6 with v4; the trainer publishes
// at its steps 2, 4 and 6. The two overlap, so they share the cores by the budget of explorer.threads
// (3 threads here: explorer 1 + trainer 2 while both are busy).
TEST(LauncherModes, BothSyncIntervalAndOffsetPipeline) {
  const std::string name = "both_offset";
  const std::string cfg = write_config(root(), name, base_yaml(root(), name));
  ::setenv("TRINITY_THREADS", "3", 1);  // inherited by the child; the tiny model would get 1 thread
  const RunOut r =
      trinity({"run", "--config", cfg, "--set", "buffer.total_steps=6", "--set", "synchronizer.sync_interval=2",
               "--set", "synchronizer.sync_offset=1", "--set", "explorer.eval_on_startup=false", "--set",
               "explorer.eval_interval=100", "--set", "explorer.threads=1"},
              root() + "/" + name + ".log");
  ::unsetenv("TRINITY_THREADS");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("cores: explorer 1 + trainer 2 threads while both are busy, 3 for either alone"),
            std::string::npos)
      << r.out;
  const auto m = read_metrics(job_dir(root(), name));
  EXPECT_EQ(metric_steps(m, "explorer", "rollout/model_version"), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(metric_values(m, "explorer", "rollout/model_version"), (std::vector<double>{0, 0, 0, 2, 2, 4})) << r.out;
  EXPECT_EQ(metric_steps(m, "trainer", "actor/pg_loss"), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
}

// CHORD (mix_chord): sample_strategy mix adds expert rows from auxiliary_buffers.sft_dataset to each
// train batch (2 tasks x 2 repeats = 4 rollout rows per explore step; ratio 0.5 of train_batch_size 8 ->
// 4 expert rows), so the expert SFT loss and the usual policy loss are both logged every step.
TEST(LauncherModes, BothMixChordTrainsOnExpertRows) {
  const std::string name = "both_chord";
  const std::string cfg = write_config(root(), name, base_yaml(root(), name));
  const RunOut r = trinity({"run", "--config", cfg, "--set", "algorithm.algorithm_type=mix_chord", "--set",
                            "algorithm.sample_strategy_args={expert_data_ratio: 0.5}", "--set", "buffer.train_batch_size=8",
                            "--set",
                            "buffer.trainer_input.auxiliary_buffers={sft_dataset: {storage_type: file, path: " + root() +
                                "/data/sft.jsonl, format: {prompt_type: plaintext, prompt_key: prompt, response_key: "
                                "response}}}"},
                           root() + "/" + name + ".log");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto m = read_metrics(job_dir(root(), name));
  EXPECT_EQ(metric_steps(m, "trainer", "actor/pg_loss"), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(metric_steps(m, "trainer", "actor/expert/sft_phi_loss").size(), 4u) << r.out;
  EXPECT_TRUE(has_metric(m, "trainer", "actor/usual/pg_loss"));
  EXPECT_NE(r.out.find("4 rollout + 4 expert experiences per train step"), std::string::npos) << r.out;
}

// SFT from a file: `rows` rows, train_batch_size 4, 1 epoch -> rows / 4 steps, each with actor/sft_loss.
void run_sft(const std::string& name, const std::string& data, const std::string& format, int64_t expect_steps) {
  std::string y = base_yaml(root(), name);
  // One epoch over the file: without buffer.total_steps (which, as upstream's reader, would read
  // train_batch_size x total_steps rows instead; tests/compat covers that).
  const std::string steps_line = "  total_steps: 4\n";
  y.erase(y.find(steps_line), steps_line.size());
  y += "mode: train\n";
  const RunOut r = trinity({"run", "--config", write_config(root(), name, y), "--set", "algorithm.algorithm_type=sft",
                            "--set", "buffer.train_batch_size=4", "--set", "buffer.total_epochs=1", "--set",
                            "buffer.trainer_input.experience_buffer.storage_type=file", "--set",
                            "buffer.trainer_input.experience_buffer.path=" + data, "--set",
                            "buffer.trainer_input.experience_buffer.format=" + format},
                           root() + "/" + name + ".log");
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::string job = job_dir(root(), name);
  const auto m = read_metrics(job);
  const auto steps = metric_steps(m, "trainer", "actor/sft_loss");
  ASSERT_EQ(static_cast<int64_t>(steps.size()), expect_steps) << r.out;
  const auto loss = metric_values(m, "trainer", "actor/sft_loss");
  EXPECT_LT(loss.back(), loss.front()) << "SFT loss did not go down";
  EXPECT_TRUE(fs::exists(job + "/global_step_" + std::to_string(expect_steps) + "/huggingface/config.json"));
}

TEST(LauncherModes, TrainSftPlaintext) {
  run_sft("sft_plain", root() + "/data/sft.jsonl", "{prompt_type: plaintext, prompt_key: prompt, response_key: response}", 8);
}

TEST(LauncherModes, TrainSftMessages) {
  std::string rows;
  for (int i = 0; i < 12; ++i)
    rows += json{{"messages", json::array({{{"role", "user"}, {"content", std::to_string(i) + "+1="}},
                                           {{"role", "assistant"}, {"content", std::to_string(i + 1)}}})}}
                .dump() +
            "\n";
  write_text(root() + "/data/sft_messages.jsonl", rows);
  run_sft("sft_messages", root() + "/data/sft_messages.jsonl", "{prompt_type: messages, messages_key: messages}", 3);
}

TEST(LauncherModes, TrainDpoFromJsonl) {
  std::string rows;
  for (int i = 0; i < 8; ++i) {
    std::string rejected = "x";  // appended, not "x" + ...: GCC 12 -Wrestrict false positive
    rejected += std::to_string(i);
    rows += json{{"prompt", std::to_string(i) + "+2="}, {"chosen", std::to_string(i + 2)}, {"rejected", rejected}}.dump();
    rows += "\n";
  }
  write_text(root() + "/data/dpo.jsonl", rows);
  const std::string name = "dpo";
  std::string y = base_yaml(root(), name) + "mode: train\n";
  const RunOut r = trinity({"run", "--config", write_config(root(), name, y), "--set", "algorithm.algorithm_type=dpo",
                            "--set", "buffer.train_batch_size=2", "--set", "buffer.total_epochs=1", "--set",
                            "buffer.trainer_input.experience_buffer.storage_type=file", "--set",
                            "buffer.trainer_input.experience_buffer.path=" + root() + "/data/dpo.jsonl", "--set",
                            "buffer.trainer_input.experience_buffer.format={prompt_type: plaintext}"},
                           root() + "/" + name + ".log");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto m = read_metrics(job_dir(root(), name));
  EXPECT_EQ(metric_steps(m, "trainer", "actor/dpo_loss"), (std::vector<int64_t>{1, 2, 3, 4}));
}

// Explorer and trainer as two processes sharing the buffer given by `storage` (--set pairs),
// checkpoint sync through the job dir.
void explore_and_train_processes(const std::string& name, const std::vector<std::string>& storage) {
  std::string y = base_yaml(root(), name);
  y += "synchronizer: {sync_timeout: 60}\n";
  const std::string cfg = write_config(root(), name, y);
  std::vector<std::string> common = {"--set", "buffer.trainer_input.experience_buffer.max_read_timeout=60"};
  common.insert(common.end(), storage.begin(), storage.end());
  std::vector<std::string> ea = {trinity_bin(), "run", "--config", cfg, "--set", "mode=explore"};
  std::vector<std::string> ta = {trinity_bin(), "run", "--config", cfg, "--set", "mode=train"};
  ea.insert(ea.end(), common.begin(), common.end());
  ta.insert(ta.end(), common.begin(), common.end());
  Proc tp = spawn(ta, root() + "/" + name + "_trainer.log");
  Proc ep = spawn(ea, root() + "/" + name + "_explorer.log");
  const int erc = wait_exit(ep, 90), trc = wait_exit(tp, 90);
  ASSERT_EQ(erc, 0) << slurp(ep.log);
  ASSERT_EQ(trc, 0) << slurp(tp.log);
  const std::string job = job_dir(root(), name);
  const auto m = read_metrics(job);
  EXPECT_EQ(metric_steps(m, "trainer", "actor/pg_loss"), (std::vector<int64_t>{1, 2, 3, 4})) << slurp(tp.log);
  const auto versions = metric_values(m, "explorer", "rollout/model_version");
  ASSERT_EQ(versions.size(), 4u);
  EXPECT_EQ(versions.front(), 0.0);
  EXPECT_GE(versions.back(), 2.0) << "the explorer never picked up the trainer's checkpoints";
  EXPECT_TRUE(std::is_sorted(versions.begin(), versions.end()));
  EXPECT_TRUE(fs::exists(job + "/global_step_4/huggingface/config.json"));
}

TEST(LauncherModes, ExploreAndTrainProcessesShareSqliteBuffer) {
  explore_and_train_processes("two_proc", {"--set", "buffer.trainer_input.experience_buffer.storage_type=sql"});
}

// The same two processes over a PostgreSQL buffer (a real server, tests/common/pg_server.h), named with
// Trinity's SQLAlchemy URL form: every explored experience is trained exactly once.
TEST(LauncherModes, ExploreAndTrainProcessesSharePostgresBuffer) {
  const std::string url = trinity::test::pg_server().url();
  const std::string alchemy = "postgresql+psycopg2://" + url.substr(std::string("postgresql://").size());
  explore_and_train_processes("two_proc_pg", {"--set", "buffer.trainer_input.experience_buffer.storage_type=sql",
                                              "--set", "buffer.trainer_input.experience_buffer.name=two_proc_pg",
                                              "--set", "buffer.trainer_input.experience_buffer.path=" + alchemy});
  const auto st = trinity::buffer::open_storage_url(url + "#two_proc_pg")->stats();
  EXPECT_EQ(st.total, 4 * 2 * 2);  // 4 explore steps x 2 tasks x 2 repeats
  EXPECT_EQ(st.consumed, st.total);
}

// Upstream's async pair (examples/async_gsm8k): storage_type queue with a database path, one process
// exploring and one training. The queue is that database, so the trainer receives what is explored.
TEST(LauncherModes, ExploreAndTrainProcessesShareAQueueWithADatabasePath) {
  const std::string db = root() + "/two_proc_queue/queue.db";
  fs::remove(db);
  explore_and_train_processes("two_proc_queue",
                              {"--set", "buffer.trainer_input.experience_buffer.storage_type=queue", "--set",
                               "buffer.trainer_input.experience_buffer.path=sqlite:///" + db});
  EXPECT_TRUE(fs::exists(db));
}

// Explore + train as two processes with a sqlite buffer and checkpoint sync (config `name`).
struct TwoProc {
  std::string cfg, job;
  std::vector<std::string> explorer_args, trainer_args;
};
TwoProc two_proc(const std::string& name, const std::string& extra_yaml, const std::vector<std::string>& extra_set) {
  TwoProc t;
  t.cfg = write_config(root(), name, base_yaml(root(), name) + extra_yaml);
  t.job = job_dir(root(), name);
  fs::remove_all(t.job);
  std::vector<std::string> common = {"--set", "buffer.trainer_input.experience_buffer.storage_type=sql",
                                     "--set", "explorer.eval_on_startup=false",
                                     "--set", "explorer.eval_interval=1000"};
  common.insert(common.end(), extra_set.begin(), extra_set.end());
  t.explorer_args = {trinity_bin(), "run", "--config", t.cfg, "--set", "mode=explore"};
  t.trainer_args = {trinity_bin(), "run", "--config", t.cfg, "--set", "mode=train"};
  t.explorer_args.insert(t.explorer_args.end(), common.begin(), common.end());
  t.trainer_args.insert(t.trainer_args.end(), common.begin(), common.end());
  return t;
}

// Waits until the trainer logged a step (or 60 s).
bool wait_trained(const std::string& job) {
  for (int i = 0; i < 600; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (fs::exists(job + "/monitor/metrics.jsonl") && has_metric(read_metrics(job), "trainer", "actor/pg_loss"))
      return true;
  }
  return false;
}

bool alive(const Proc& p) {
  siginfo_t info{};
  return waitid(P_PID, static_cast<id_t>(p.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == 0;
}

// The trainer process is killed (SIGKILL) mid-run and not restarted: the explorer says it is waiting
// for a trainer to resume the job, and when synchronizer.sync_timeout passes it exits 1 with a clear
// error naming the vanished trainer process.
TEST(LauncherModes, ExplorerWaitsForAKilledTrainerThenFailsClearly) {
  TwoProc t = two_proc("two_proc_kill", "synchronizer: {sync_timeout: 8}\n", {"--set", "buffer.total_steps=400"});
  Proc tp = spawn(t.trainer_args, root() + "/two_proc_kill_trainer.log");
  Proc ep = spawn(t.explorer_args, root() + "/two_proc_kill_explorer.log");
  ASSERT_TRUE(wait_trained(t.job)) << slurp(tp.log);
  kill(tp.pid, SIGKILL);
  wait_exit(tp, 30);
  const auto t0 = std::chrono::steady_clock::now();
  const int erc = wait_exit(ep, 60);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string out = slurp(ep.log);
  EXPECT_EQ(erc, 1) << out;
  EXPECT_GE(waited, 3.0) << "the explorer did not wait for the trainer to come back: " << out;
  EXPECT_LT(waited, 40.0) << out;
  EXPECT_NE(out.find("waiting up to"), std::string::npos) << out;
  EXPECT_NE(out.find("trainer process (pid"), std::string::npos) << out;
  EXPECT_NE(out.find("is gone"), std::string::npos) << out;
  EXPECT_EQ(count_lines_with(out, "trinity: error: [explorer] waited synchronizer.sync_timeout = 8 s"), 1) << out;
}

// Either process of an explore + train pair can be killed and restarted alone: the survivor waits
// (with a status line) and the job completes with every step trained exactly once.
void kill_and_restart(const std::string& name, bool kill_trainer) {
  const int64_t steps = 16;
  TwoProc t = two_proc(name, "synchronizer: {sync_timeout: 90}\n",
                       {"--set", "buffer.total_steps=" + std::to_string(steps), "--set",
                        "buffer.trainer_input.experience_buffer.max_read_timeout=90"});
  Proc tp = spawn(t.trainer_args, root() + "/" + name + "_trainer.log");
  Proc ep = spawn(t.explorer_args, root() + "/" + name + "_explorer.log");
  ASSERT_TRUE(wait_trained(t.job)) << slurp(tp.log);
  Proc& victim = kill_trainer ? tp : ep;
  Proc& survivor = kill_trainer ? ep : tp;
  kill(victim.pid, SIGKILL);
  ASSERT_EQ(wait_exit(victim, 30), 128 + SIGKILL);
  // The survivor keeps waiting and says so.
  bool said = false;
  for (int i = 0; i < 100 && !said; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    said = slurp(survivor.log).find("waiting up to") != std::string::npos;
  }
  const bool survivor_alive = alive(survivor);
  if (!said && !survivor_alive) {
    // The survivor may have finished its part before the kill (the explorer's steps are quick).
    ASSERT_FALSE(kill_trainer) << "the explorer ended when its trainer died: " << slurp(survivor.log);
  }
  EXPECT_TRUE(said || !survivor_alive) << slurp(survivor.log);
  const std::string relog = root() + "/" + name + (kill_trainer ? "_trainer2.log" : "_explorer2.log");
  Proc again = spawn(kill_trainer ? t.trainer_args : t.explorer_args, relog);
  const int rc_again = wait_exit(again, 120), rc_survivor = wait_exit(survivor, 120);
  ASSERT_EQ(rc_again, 0) << slurp(again.log);
  ASSERT_EQ(rc_survivor, 0) << slurp(survivor.log);
  const auto m = read_metrics(t.job);
  std::vector<int64_t> want;
  for (int64_t s = 1; s <= steps; ++s) want.push_back(s);
  EXPECT_EQ(metric_steps(m, "trainer", "actor/pg_loss"), want) << slurp(again.log);
  EXPECT_EQ(metric_steps(m, "explorer", "rollout/finished_task_count"), want) << slurp(again.log);
  EXPECT_TRUE(fs::exists(t.job + "/global_step_" + std::to_string(steps) + "/huggingface/config.json"));
}

TEST(LauncherModes, KilledTrainerRestartedAloneCompletesTheJob) {
  kill_and_restart("restart_trainer", true);
}
TEST(LauncherModes, KilledExplorerRestartedAloneCompletesTheJob) {
  kill_and_restart("restart_explorer", false);
}

TEST(LauncherModes, BenchEvaluatesBaseAndEveryCheckpoint) {
  const std::string name = "bench";
  const std::string cfg = write_config(root(), name, base_yaml(root(), name));
  ASSERT_EQ(trinity({"run", "--config", cfg}, root() + "/bench_train.log").rc, 0) << slurp(root() + "/bench_train.log");
  const RunOut r = trinity({"run", "--config", cfg, "--set", "mode=bench"}, root() + "/bench.log");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto m = read_metrics(job_dir(root(), name));
  EXPECT_EQ(metric_steps(m, "bench", "bench/arith_eval/accuracy/mean@1"), (std::vector<int64_t>{0, 2, 4})) << r.out;
  EXPECT_EQ(metric_values(m, "bench", "bench/arith_eval/finished_task_count"), (std::vector<double>{4, 4, 4}));
}

TEST(LauncherModes, MultiStageSftThenGrpoSkipsFinishedStagesOnRerun) {
  const std::string name = "stages";
  std::string y = base_yaml(root(), name);
  y += "stages:\n"
       "  - stage_name: sft\n"
       "    mode: train\n"
       "    algorithm: {algorithm_type: sft, optimizer: {lr: 1e-3}}\n"
       "    buffer:\n"
       "      train_batch_size: 8\n"
       "      total_epochs: 1\n"
       "      trainer_input:\n"
       "        experience_buffer:\n"
       "          name: sft_data\n"
       "          storage_type: file\n"
       "          path: " + root() + "/data/sft.jsonl\n"
       "          format: {prompt_type: plaintext, prompt_key: prompt, response_key: response}\n"
       "  - stage_name: grpo\n";
  const std::string cfg = write_config(root(), name, y);
  const RunOut r = trinity({"run", "--config", cfg}, root() + "/stages.log");
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::string job = job_dir(root(), name);
  const json meta = json::parse(slurp(job + "/stage_meta.json"));
  ASSERT_TRUE(meta.contains("done")) << meta.dump();
  EXPECT_TRUE(meta["done"].contains(name + "/sft")) << meta.dump();
  EXPECT_TRUE(meta["done"].contains(name + "/grpo")) << meta.dump();
  EXPECT_EQ(meta["done"][name + "/sft"].get<std::string>(), job + "/sft/global_step_4/huggingface");
  EXPECT_EQ(metric_steps(read_metrics(job + "/sft"), "trainer", "actor/sft_loss").size(), 4u);
  EXPECT_EQ(metric_steps(read_metrics(job + "/grpo"), "trainer", "actor/pg_loss").size(), 4u);
  // The GRPO stage starts from the SFT checkpoint.
  EXPECT_NE(r.out.find("sft/global_step_4/huggingface"), std::string::npos) << r.out;

  const size_t lines_before = read_metrics(job + "/grpo").size();
  const RunOut again = trinity({"run", "--config", cfg}, root() + "/stages2.log");
  ASSERT_EQ(again.rc, 0) << again.out;
  EXPECT_EQ(count_lines_with(again.out, "already finished"), 2) << again.out;
  EXPECT_EQ(read_metrics(job + "/grpo").size(), lines_before);
}

// ---- peer failures and bad configs ----

TEST(LauncherPeerFailure, TrainWithoutExplorerFailsAfterMaxReadTimeout) {
  const std::string name = "no_explorer";
  const std::string cfg = write_config(root(), name, base_yaml(root(), name));
  const RunOut r = trinity({"run", "--config", cfg, "--set", "mode=train", "--set",
                            "buffer.trainer_input.experience_buffer.storage_type=sql", "--set",
                            "buffer.trainer_input.experience_buffer.max_read_timeout=3"},
                           root() + "/" + name + ".log", 40);
  ASSERT_NE(r.rc, -1) << "hung: " << r.out;
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_LT(r.seconds, 30);
  // One line, the component named once (not "[trainer] [trainer] ...").
  EXPECT_EQ(count_lines_with(r.out, "trinity: error: [trainer] waited buffer.trainer_input.experience_buffer.max_read_timeout = 3 s"), 1)
      << r.out;
}

TEST(LauncherPeerFailure, ExploreWithoutTrainerFailsAfterSyncTimeout) {
  const std::string name = "no_trainer";
  const std::string cfg = write_config(root(), name, base_yaml(root(), name));
  const RunOut r = trinity({"run", "--config", cfg, "--set", "mode=explore", "--set", "synchronizer.sync_timeout=3", "--set",
                            "buffer.trainer_input.experience_buffer.storage_type=sql"},
                           root() + "/" + name + ".log", 40);
  ASSERT_NE(r.rc, -1) << "hung: " << r.out;
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_LT(r.seconds, 30);
  EXPECT_EQ(count_lines_with(r.out, "trinity: error: [explorer] waited synchronizer.sync_timeout = 3 s"), 1) << r.out;
}

TEST(LauncherBadConfig, UnknownKeyAndMissingTasksetExitOneNamingTheKey) {
  std::string y = base_yaml(root(), "bad");
  y.replace(y.find("  save_interval: 2"), 18, "  save_intervall: 2");
  const RunOut r = trinity({"run", "--config", write_config(root(), "bad", y)}, root() + "/bad.log");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("save_intervall"), std::string::npos) << r.out;

  std::string y2 = base_yaml(root(), "bad2");
  const size_t a = y2.find("    taskset:"), b = y2.find("    eval_tasksets:");
  y2.erase(a, b - a);
  const RunOut r2 = trinity({"run", "--config", write_config(root(), "bad2", y2)}, root() + "/bad2.log");
  EXPECT_EQ(r2.rc, 1) << r2.out;
  EXPECT_NE(r2.out.find("taskset"), std::string::npos) << r2.out;
  EXPECT_FALSE(fs::exists(job_dir(root(), "bad2") + "/global_step_1"));
}

}  // namespace
}  // namespace trinity::test
