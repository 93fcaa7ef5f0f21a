// Drop-in compatibility: configs written in upstream Trinity-RFT's layout, one per example family
// (tests/compat/configs: gsm8k, math, countdown, frozen lake, the async explorer/trainer pair, sft,
// dpo, mix/chord, bench, multi-stage), each checked with `trinity config check` and run for 2 steps
// by the real `trinity` binary on a tiny local model, with data in each example's own format
// (tests/js/compat_data.mjs; parquet written by DuckDB). Paths reach the configs the way upstream's
// do: through ${oc.env:TRINITY_MODEL_PATH}, TRINITY_TASKSET_PATH, TRINITY_SFT_DATASET_PATH and
// TRINITY_CHECKPOINT_ROOT_DIR. docs/compatibility.md lists every upstream family and where it stands.
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "launcher/e2e_util.h"

namespace trinity::test {
namespace {

const std::string& root() {
  static const std::string r = [] {
    const std::string d = (fs::temp_directory_path() / ("trinity-compat-test-" + std::to_string(getpid()))).string();
    fs::remove_all(d);
    fs::create_directories(d);
    // A 1-layer qwen2 with the bytes tokenizer (ChatML template): every family's prompts fit.
    const RunOut m =
        trinity({"init-model", "--arch", "qwen2", "--hidden", "32", "--layers", "1", "--heads", "2", "--intermediate",
                 "64", "--max-pos", "2048", "--tokenizer", "bytes", "--seed", "1", "--out", d + "/model"},
                d + "/init.log");
    EXPECT_EQ(m.rc, 0) << m.out;
    const std::string js = std::string(TRINITY_SOURCE_DIR) + "/tests/js";
    EXPECT_TRUE(fs::exists(js + "/node_modules/@duckdb/node-api"))
        << "npm test oracles missing: run scripts/setup (npm ci in tests/js)";
    const std::string cmd = "node '" + js + "/compat_data.mjs' '" + d + "/data' > '" + d + "/data.log' 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << slurp(d + "/data.log");
    return d;
  }();
  return r;
}

const std::string kCkpt = "/ckpt";

// Copies tests/compat/configs/<family>.yaml into its own folder (relative sqlite:/// paths resolve
// there) and sets the environment variables upstream's configs read.
std::string prepare(const std::string& family, const std::map<std::string, std::string>& data_env) {
  const std::string dir = root() + "/" + family;
  fs::create_directories(dir);
  const std::string cfg = dir + "/" + family + ".yaml";
  fs::copy_file(std::string(TRINITY_SOURCE_DIR) + "/tests/compat/configs/" + family + ".yaml", cfg,
                fs::copy_options::overwrite_existing);
  setenv("TRINITY_MODEL_PATH", (root() + "/model").c_str(), 1);
  setenv("TRINITY_CHECKPOINT_ROOT_DIR", (root() + kCkpt).c_str(), 1);
  unsetenv("TRINITY_TASKSET_PATH");
  unsetenv("TRINITY_SFT_DATASET_PATH");
  for (const auto& [k, v] : data_env) setenv(k.c_str(), (root() + "/data/" + v).c_str(), 1);
  return cfg;
}

// `trinity config check` passes; returns its output.
std::string check(const std::string& family, const std::string& cfg) {
  const RunOut r = trinity({"config", "check", "--config", cfg}, root() + "/" + family + "/check.log");
  EXPECT_EQ(r.rc, 0) << family << ": trinity config check failed:\n" << r.out;
  return r.out;
}

RunOut run(const std::string& family, const std::string& cfg, double timeout_s = 300) {
  RunOut r = trinity({"run", "--config", cfg}, root() + "/" + family + "/run.log", timeout_s);
  EXPECT_EQ(r.rc, 0) << family << ": trinity run failed:\n" << r.out;
  return r;
}

std::string job(const std::string& project, const std::string& name) {
  return root() + kCkpt + "/" + project + "/" + name;
}

const std::vector<int64_t> kTwoSteps = {1, 2};

TEST(Compat, Gsm8kHubLayoutParquetGrpo) {
  const std::string cfg = prepare("gsm8k", {{"TRINITY_TASKSET_PATH", "gsm8k"}});
  check("gsm8k", cfg);
  const RunOut r = run("gsm8k", cfg);
  const auto m = read_metrics(job("Trinity-RFT-gsm8k", "compat-gsm8k"));
  EXPECT_EQ(metric_steps(m, "trainer", "actor/pg_loss"), kTwoSteps) << r.out;
  // 16 train rows, batch 2 x repeat 4: two steps explored 4 tasks.
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/finished_task_count"), 4.0) << r.out;
  EXPECT_TRUE(fs::exists(root() + "/gsm8k/gsm8k.db")) << "the sqlite queue lives beside the config";
}

// enable_prompt_truncation (on by default, as upstream): prompts longer than max_prompt_tokens give
// masked dummy experiences -- the run goes on and trains on the rest instead of failing every task.
TEST(Compat, OverlongPromptsBecomeMaskedDummies) {
  const std::string cfg = prepare("gsm8k", {{"TRINITY_TASKSET_PATH", "gsm8k"}});
  const RunOut r =
      trinity({"run", "--config", cfg, "--set", "name=compat-overlong", "--set", "model.max_model_len=160"},
              root() + "/gsm8k/overlong.log", 300);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("are masked out (model.enable_prompt_truncation)"), std::string::npos) << r.out;
  const auto m = read_metrics(job("Trinity-RFT-gsm8k", "compat-overlong"));
  EXPECT_EQ(metric_steps(m, "trainer", "actor/pg_loss"), kTwoSteps) << r.out;
  for (double v : metric_values(m, "trainer", "actor/pg_loss")) EXPECT_EQ(v, 0.0) << "masked dummies carry no loss";
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/failed_task_count"), 0.0) << r.out;
}

// upstream's grpo_gsm8k_experience_pipeline: data_processor.experience_pipeline operators run on each
// step's experiences before the group advantage, with Trinity's metric names.
TEST(Compat, ExperiencePipelineOperators) {
  const std::string cfg = prepare("gsm8k", {{"TRINITY_TASKSET_PATH", "gsm8k"}});
  const std::string ops =
      "data_processor={experience_pipeline: {operators: [{name: invalid_reward_filter}, "
      "{name: reward_shaping_mapper, args: {reward_shaping_configs: [{stats_key: missing, op_type: ADD}]}}, "
      "{name: reward_filter, args: {threshold: -100.0}}]}}";
  const RunOut r =
      trinity({"run", "--config", cfg, "--set", "name=compat-ops", "--set", ops}, root() + "/gsm8k/ops.log", 300);
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto m = read_metrics(job("Trinity-RFT-gsm8k", "compat-ops"));
  EXPECT_EQ(metric_steps(m, "explorer", "experience_pipeline/filtered_count"), kTwoSteps) << r.out;
  EXPECT_EQ(metric_sum(m, "explorer", "experience_pipeline/filtered_count"), 0.0);
  EXPECT_EQ(metric_steps(m, "explorer", "time/experience_pipeline/operator/1_reward_shaping_mapper"), kTwoSteps);
  EXPECT_EQ(metric_steps(m, "trainer", "actor/pg_loss"), kTwoSteps) << r.out;
  // An unknown operator fails config check and run before anything loads.
  const RunOut bad = trinity({"config", "check", "--config", cfg, "--set",
                              "data_processor={experience_pipeline: {operators: [{name: reward_filtr}]}}"},
                             root() + "/gsm8k/ops_bad.log");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.out.find("did you mean 'reward_filter'"), std::string::npos) << bad.out;
}

TEST(Compat, DapoMathBoxedWithOverlongPenalty) {
  const std::string cfg = prepare("math", {{"TRINITY_TASKSET_PATH", "dapo"}});
  check("math", cfg);
  const RunOut r = run("math", cfg);
  const auto m = read_metrics(job("Trinity-RFT-example", "compat-dapo"));
  EXPECT_EQ(metric_steps(m, "trainer", "actor/pg_loss"), kTwoSteps) << r.out;
}

TEST(Compat, CountdownPpoWithVerlCriticKeys) {
  const std::string cfg = prepare("countdown", {{"TRINITY_TASKSET_PATH", "countdown.jsonl"}});
  const std::string out = check("countdown", cfg);
  // The verl keys with a trinity equivalent are mapped, not ignored.
  EXPECT_EQ(out.find("critic.optim.lr"), std::string::npos) << "mapped keys must not be reported as ignored:\n" << out;
  const RunOut r = run("countdown", cfg);
  const auto m = read_metrics(job("Trinity-RFT-countdown", "compat-countdown"));
  EXPECT_EQ(metric_steps(m, "trainer", "actor/pg_loss"), kTwoSteps) << r.out;
  EXPECT_EQ(metric_steps(m, "trainer", "critic/vf_loss"), kTwoSteps) << r.out;
}

TEST(Compat, FrozenLakeParquetSplitsEvalOnStartup) {
  const std::string cfg = prepare("frozen_lake", {{"TRINITY_TASKSET_PATH", "frozen_lake"}});
  check("frozen_lake", cfg);
  const RunOut r = run("frozen_lake", cfg);
  const auto m = read_metrics(job("FrozenLake", "compat-frozen-lake"));
  EXPECT_EQ(metric_steps(m, "trainer", "actor/pg_loss"), kTwoSteps) << r.out;
  bool eval_at_0 = false;
  for (const auto& j : m)
    if (j.value("role", "") == "explorer" && j.value("step", -1) == 0)
      for (const auto& [k, v] : j.items()) eval_at_0 = eval_at_0 || k.rfind("eval/frozenlake/", 0) == 0;
  EXPECT_TRUE(eval_at_0) << "eval_on_startup: eval metrics at step 0\n" << r.out;
}

TEST(Compat, AsyncExplorerAndTrainerShareASqliteQueue) {
  const std::string ecfg = prepare("async_explorer", {{"TRINITY_TASKSET_PATH", "gsm8k"}});
  // Both halves in one folder: the relative sqlite:///gsm8k.db is the same file for both.
  const std::string dir = root() + "/async_explorer";
  const std::string tcfg = dir + "/async_trainer.yaml";
  fs::copy_file(std::string(TRINITY_SOURCE_DIR) + "/tests/compat/configs/async_trainer.yaml", tcfg,
                fs::copy_options::overwrite_existing);
  check("async_explorer", ecfg);
  check("async_explorer", tcfg);
  const Proc tp = spawn({trinity_bin(), "run", "--config", tcfg}, dir + "/trainer.log");
  const Proc ep = spawn({trinity_bin(), "run", "--config", ecfg}, dir + "/explorer.log");
  const int erc = wait_exit(ep, 300), trc = wait_exit(tp, 300);
  EXPECT_EQ(erc, 0) << slurp(dir + "/explorer.log");
  EXPECT_EQ(trc, 0) << slurp(dir + "/trainer.log");
  const auto m = read_metrics(job("Trinity-RFT-gsm8k", "compat-async-gsm8k"));
  EXPECT_EQ(metric_steps(m, "trainer", "actor/pg_loss"), kTwoSteps) << slurp(dir + "/trainer.log");
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/finished_task_count"), 4.0) << slurp(dir + "/explorer.log");

  // An explorer whose every task fails (prompts longer than max_model_len, truncation off) writes nothing: both
  // processes exit non-zero and say why, instead of a trainer that "finished" with 0 steps.
  const std::vector<std::string> fail = {"--set", "name=compat-async-fail"};
  std::vector<std::string> targs = {trinity_bin(), "run", "--config", tcfg};
  std::vector<std::string> eargs = {trinity_bin(), "run",
                                    "--config",    ecfg,
                                    "--set",       "model.max_model_len=160",
                                    "--set",       "model.enable_prompt_truncation=false"};
  targs.insert(targs.end(), fail.begin(), fail.end());
  eargs.insert(eargs.end(), fail.begin(), fail.end());
  const Proc tp2 = spawn(targs, dir + "/trainer_fail.log");
  const Proc ep2 = spawn(eargs, dir + "/explorer_fail.log");
  EXPECT_EQ(wait_exit(ep2, 300), 1) << slurp(dir + "/explorer_fail.log");
  EXPECT_EQ(wait_exit(tp2, 300), 1) << slurp(dir + "/trainer_fail.log");
  EXPECT_NE(slurp(dir + "/trainer_fail.log").find("no step trained"), std::string::npos)
      << slurp(dir + "/trainer_fail.log");
}

TEST(Compat, SftOnParquetChatMessagesWithSubset) {
  const std::string cfg = prepare("sft", {{"TRINITY_SFT_DATASET_PATH", "mot"}});
  check("sft", cfg);
  const RunOut r = run("sft", cfg);
  const auto m = read_metrics(job("Trinity-RFT-example", "compat-sft"));
  EXPECT_EQ(metric_steps(m, "trainer", "actor/sft_loss"), kTwoSteps) << r.out;
}

TEST(Compat, DpoPlaintextWithCosineWarmup) {
  const std::string cfg = prepare("dpo", {{"TRINITY_TASKSET_PATH", "dpo.jsonl"}});
  check("dpo", cfg);
  const RunOut r = run("dpo", cfg);
  const auto m = read_metrics(job("dpo_example", "compat-dpo"));
  EXPECT_EQ(metric_steps(m, "trainer", "actor/dpo_loss"), kTwoSteps) << r.out;
}

TEST(Compat, MixChordWithExpertSftBuffer) {
  const std::string cfg =
      prepare("mix_chord", {{"TRINITY_TASKSET_PATH", "openr1.jsonl"}, {"TRINITY_SFT_DATASET_PATH", "sft"}});
  check("mix_chord", cfg);
  const RunOut r = run("mix_chord", cfg);
  const auto m = read_metrics(job("mix_chord", "compat-mix-chord"));
  EXPECT_EQ(metric_steps(m, "trainer", "actor/pg_loss"), kTwoSteps) << r.out;
  EXPECT_EQ(metric_steps(m, "trainer", "actor/expert/sft_phi_loss").size(), 2u) << r.out;
}

TEST(Compat, BenchEvaluatesTheModelAndCheckpoints) {
  // Bench reads the checkpoints of the gsm8k job (same project/name); make them if this test runs alone.
  const std::string gjob = job("Trinity-RFT-gsm8k", "compat-gsm8k");
  if (!fs::exists(gjob + "/monitor/metrics.jsonl")) {
    const std::string g = prepare("gsm8k", {{"TRINITY_TASKSET_PATH", "gsm8k"}});
    run("gsm8k", g);
  }
  const std::string cfg = prepare("bench", {{"TRINITY_TASKSET_PATH", "gsm8k"}});
  check("bench", cfg);
  const RunOut r = run("bench", cfg);
  const auto m = read_metrics(gjob);
  bool bench_eval = false;
  for (const auto& j : m)
    for (const auto& [k, v] : j.items()) bench_eval = bench_eval || k.rfind("bench/gsm8k_eval/", 0) == 0;
  EXPECT_TRUE(bench_eval) << "bench wrote bench/gsm8k_eval/* metrics\n" << r.out;
}

TEST(Compat, MultiStageSftWarmupThenGrpo) {
  const std::string cfg =
      prepare("multi_stage", {{"TRINITY_TASKSET_PATH", "gsm8k"}, {"TRINITY_SFT_DATASET_PATH", "sft/train.jsonl"}});
  check("multi_stage", cfg);
  const RunOut r = run("multi_stage", cfg, 600);
  const std::string base = job("Trinity-RFT-gsm8k", "compat-multi-stage");
  const auto sft = read_metrics(base + "/sft_warmup");
  const auto rft = read_metrics(base + "/rft");
  EXPECT_EQ(metric_steps(sft, "trainer", "actor/sft_loss"), kTwoSteps) << r.out;
  EXPECT_EQ(metric_steps(rft, "trainer", "actor/pg_loss"), kTwoSteps) << r.out;
}

}  // namespace
}  // namespace trinity::test
