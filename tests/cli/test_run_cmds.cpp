// End-to-end tests of `trinity debug workflow` and `trinity bench` on a tiny random model (bytes
// tokenizer) with arithmetic data: the printed task row, one highlighted experience per repeat,
// experiences.jsonl consistent with the printout, workflow failures as one clear error (exit 1), and
// bench evaluating the base model plus every checkpoint of a run (also the last stage of a staged
// config, whose base model is the previous stage's checkpoint), `trinity run`'s summary on stdout and
// a bf16 base model's checkpoint exported as bf16. Every subprocess runs under `timeout`.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_util.h"

using json = nlohmann::json;
namespace fs = std::filesystem;

using namespace trinity::test;

namespace {

size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + needle.size())) ++n;
  return n;
}

class RunCmds : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = (fs::temp_directory_path() / ("trinity_run_cmds_" + std::to_string(getpid()))).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    Result r = run("init-model --arch qwen2 --hidden 32 --layers 1 --heads 2 --intermediate 64 --max-pos 64 "
                   "--tokenizer bytes --seed 3 --out " + dir_ + "/model");
    ASSERT_EQ(r.code, 0) << r.err;
    r = run("make-data arithmetic --out " + dir_ + "/data --train 32 --eval 4 --sft 16 --seed 5");
    ASSERT_EQ(r.code, 0) << r.err;
    std::ofstream(dir_ + "/grpo.yaml") << config_text("grpo_run", "");
    std::ofstream(dir_ + "/staged.yaml")
        << config_text("staged_run",
                       "stages:\n"
                       "  - stage_name: warmup\n"
                       "    mode: train\n"
                       "    algorithm: {algorithm_type: sft, optimizer: {lr: 1e-3}}\n"
                       "    buffer:\n"
                       "      train_batch_size: 8\n"
                       "      total_steps: 2\n"
                       "      trainer_input:\n"
                       "        experience_buffer:\n"
                       "          name: sft_data\n"
                       "          storage_type: file\n"
                       "          path: " + dir_ + "/data/sft.jsonl\n"
                       "          format: {prompt_type: plaintext, prompt_key: prompt, response_key: response}\n"
                       "  - stage_name: rl\n");
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::string config_text(const std::string& name, const std::string& extra) {
    return "project: run_cmds\n"
           "name: " + name + "\n"
           "checkpoint_root_dir: " + dir_ + "/ck\n"
           "model: {model_path: " + dir_ + "/model, max_prompt_tokens: 32, max_response_tokens: 8}\n"
           "algorithm: {algorithm_type: grpo, repeat_times: 4, kl_loss_fn: none, optimizer: {lr: 1e-3}}\n"
           "buffer:\n"
           "  batch_size: 2\n"
           "  total_steps: 2\n"
           "  explorer_input:\n"
           "    taskset:\n"
           "      name: arith\n"
           "      path: " + dir_ + "/data/train.jsonl\n"
           "      format: {prompt_key: prompt, response_key: answer}\n"
           "    eval_tasksets:\n"
           "      - name: arith_eval\n"
           "        path: " + dir_ + "/data/eval.jsonl\n"
           "        format: {prompt_key: prompt, response_key: answer}\n"
           "        rollout_args: {temperature: 0.0}\n"
           "    default_workflow_type: arithmetic_workflow\n"
           "explorer: {runner_per_model: 2, eval_interval: 1, eval_on_startup: false, max_timeout: 60}\n"
           "synchronizer: {sync_method: memory, sync_interval: 1}\n"
           "trainer: {save_interval: 1}\n"
           "monitor: {monitor_type: jsonl}\n" +
           extra;
  }

  // `trinity <args>` under a 240 s timeout; stdout and stderr captured separately.
  static Result run(const std::string& args) { return run_trinity(dir_, args, 240); }

  static std::string dir_;
};

std::string RunCmds::dir_;

TEST_F(RunCmds, DebugWorkflowPrintsTaskAndEveryRun) {
  const std::string out = dir_ + "/dw";
  const Result r = run("debug workflow --config " + dir_ + "/grpo.yaml --task 1 --no-color --output " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  // The task row printed is row 1 of the training file.
  std::ifstream data(dir_ + "/data/train.jsonl");
  std::string line;
  std::getline(data, line);
  std::getline(data, line);
  const json row = json::parse(line);
  EXPECT_NE(r.out.find("task 1 of taskset 'arith'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("workflow arithmetic_workflow, repeat_times 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(row["prompt"].get<std::string>()), std::string::npos) << r.out;
  EXPECT_EQ(count(r.out, "=== experience "), 4u) << r.out;
  EXPECT_EQ(count(r.out, "  reward: "), 4u);
  EXPECT_EQ(count(r.out, "  logprobs: "), 4u);
  EXPECT_GE(count(r.out, "[["), 4u);  // generated tokens are marked
  EXPECT_NE(r.out.find("finish: "), std::string::npos);
  EXPECT_EQ(r.out.find("\x1b["), std::string::npos) << "--no-color must not print ANSI codes";

  // experiences.jsonl: one row per run, consistent arrays, the same rewards as printed.
  std::ifstream ex(out + "/experiences.jsonl");
  std::vector<json> rows;
  while (std::getline(ex, line))
    if (!line.empty()) rows.push_back(json::parse(line));
  ASSERT_EQ(rows.size(), 4u);
  std::vector<int64_t> runs;
  for (const auto& e : rows) {
    EXPECT_EQ(e["eid"]["task"].get<int64_t>(), 1);
    runs.push_back(e["eid"]["run"].get<int64_t>());
    const auto n = e["tokens"].size() - e["prompt_length"].get<size_t>();
    EXPECT_EQ(e["logprobs"].size(), n);
    EXPECT_EQ(e["action_mask"].size(), n);
    EXPECT_GT(n, 0u);
    const double reward = e["reward"].get<double>();
    EXPECT_TRUE(reward == 0.0 || reward == 1.0) << reward;
    char buf[64];
    std::snprintf(buf, sizeof buf, "  reward: %.4f", reward);
    EXPECT_NE(r.out.find(buf), std::string::npos);
  }
  std::sort(runs.begin(), runs.end());
  EXPECT_EQ(runs, (std::vector<int64_t>{0, 1, 2, 3}));
}

// A judged workflow: explorer.auxiliary_models are loaded, the judge's prompt and judgement are
// printed per experience; the random judge never answers with a rating, so judge_failure zero gives
// reward 0 and the default fails the run with the "[judge] unparsable" class.
TEST_F(RunCmds, DebugWorkflowJudgedByAnAuxiliaryModel) {
  Result r =
      run("init-model --arch qwen2 --hidden 32 --layers 1 --heads 2 --intermediate 64 --max-pos 1024 "
          "--tokenizer bytes --seed 4 --out " +
          dir_ + "/judge");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string base = "debug workflow --config " + dir_ +
                           "/grpo.yaml --task 0 --no-color --set model.model_path=" + dir_ +
                           "/judge --set model.max_prompt_tokens=512 "
                           "--set buffer.explorer_input.default_workflow_type=rubric_judge_workflow "
                           "--set 'explorer.auxiliary_models=[{model_path: " +
                           dir_ + "/judge, max_model_len: 1024, max_response_tokens: 8}]'";
  r = run(base + " --set 'buffer.explorer_input.taskset.workflow_args={judge_failure: zero}'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("auxiliary model 'auxiliary_model_0'"), std::string::npos) << r.err;
  EXPECT_EQ(count(r.out, "=== experience "), 4u) << r.out;
  EXPECT_EQ(count(r.out, "judge call 0 (auxiliary_models[0]): score none (unparsable: no \"rating\" found"), 4u)
      << r.out;
  EXPECT_EQ(
      count(r.out, "      <rubrics>\n      Rubrics are not provided.\n      </rubrics>\n      Your JSON Evaluation:"),
      4u);
  EXPECT_EQ(count(r.out, "    judgement:\n"), 4u);
  EXPECT_NE(r.out.find("task metric judge_success = 0"), std::string::npos) << r.out;
  r = run(base);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("[judge] unparsable: rubric_judge_workflow run "), std::string::npos) << r.err;
}

TEST_F(RunCmds, DebugWorkflowEvalTasksetAndSeedReproducible) {
  const std::string args = "debug workflow --config " + dir_ + "/grpo.yaml --taskset eval --task 3 --no-color";
  const Result a = run(args + " --output " + dir_ + "/dw_eval_a");
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_NE(a.out.find("taskset 'arith_eval'"), std::string::npos) << a.out;
  EXPECT_EQ(count(a.out, "=== experience "), 1u) << a.out;  // eval tasksets keep repeat_times 1
  const Result b = run(args + " --output " + dir_ + "/dw_eval_b");
  ASSERT_EQ(b.code, 0) << b.err;
  const json ea = json::parse(slurp(dir_ + "/dw_eval_a/experiences.jsonl"));
  const json eb = json::parse(slurp(dir_ + "/dw_eval_b/experiences.jsonl"));
  EXPECT_EQ(ea["tokens"], eb["tokens"]);  // greedy eval: same rollout
}

TEST_F(RunCmds, DebugWorkflowFailuresAreOneClearError) {
  Result r = run("debug workflow --config " + dir_ + "/grpo.yaml --task 32");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--task 32 is out of range"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("has 32 tasks"), std::string::npos) << r.err;

  r = run("debug workflow --config " + dir_ + "/grpo.yaml --set 'buffer.explorer_input.taskset.workflow_args={bogus: 1}'");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("workflow 'arithmetic_workflow' failed on task 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bogus"), std::string::npos) << r.err;

  r = run("debug workflow --config " + dir_ + "/grpo.yaml --taskset nope");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("arith, arith_eval"), std::string::npos) << r.err;
}

// Eval metric lines of `trinity bench` output: "step N" headers followed by "  key value".
std::vector<std::pair<int64_t, double>> bench_rows(const std::string& out, const std::string& key) {
  std::vector<std::pair<int64_t, double>> rows;
  std::istringstream in(out);
  std::string line;
  int64_t step = -1;
  while (std::getline(in, line)) {
    if (line.rfind("step ", 0) == 0) step = std::stoll(line.substr(5));
    const auto p = line.find(key);
    if (p != std::string::npos && line.rfind("  ", 0) == 0) rows.push_back({step, std::stod(line.substr(p + key.size()))});
  }
  return rows;
}

TEST_F(RunCmds, BenchEvaluatesBaseAndEveryCheckpoint) {
  Result r = run("run --config " + dir_ + "/grpo.yaml");
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_TRUE(fs::exists(dir_ + "/ck/run_cmds/grpo_run/global_step_2/huggingface/config.json"));
  r = run("bench --config " + dir_ + "/grpo.yaml --set explorer.eval_on_startup=true");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("step 0 (base model)"), std::string::npos) << r.out;
  const auto rows = bench_rows(r.out, "bench/arith_eval/accuracy/mean@1");
  ASSERT_EQ(rows.size(), 3u) << r.out;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(rows[static_cast<size_t>(i)].first, i);
    EXPECT_GE(rows[static_cast<size_t>(i)].second, 0.0);
    EXPECT_LE(rows[static_cast<size_t>(i)].second, 1.0);
  }
  // The run's own metrics file got the bench evaluations too.
  EXPECT_NE(slurp(dir_ + "/ck/run_cmds/grpo_run/monitor/metrics.jsonl").find("bench/arith_eval"), std::string::npos);

  // A config without eval tasksets cannot be benched.
  r = run("bench --config " + dir_ + "/grpo.yaml --set 'buffer.explorer_input.eval_tasksets=[]'");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("eval_tasksets"), std::string::npos) << r.err;
}

TEST_F(RunCmds, BenchOfStagedConfigStartsFromPreviousStage) {
  Result r = run("run --config " + dir_ + "/staged.yaml");
  ASSERT_EQ(r.code, 0) << r.err;
  r = run("bench --config " + dir_ + "/staged.yaml --set explorer.eval_on_startup=true");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("bench of staged_run/rl"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("stage 'staged_run/warmup''s final checkpoint"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("warmup/global_step_2/huggingface"), std::string::npos) << r.err;
  EXPECT_EQ(bench_rows(r.out, "bench/arith_eval/accuracy/mean@1").size(), 3u) << r.out;
  // Without eval_on_startup only the checkpoints are evaluated.
  r = run("bench --config " + dir_ + "/staged.yaml");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("(base model)"), std::string::npos) << r.out;
  EXPECT_EQ(bench_rows(r.out, "bench/arith_eval/accuracy/mean@1").size(), 2u) << r.out;

  // debug workflow on the staged config uses the last stage with a taskset and the chained model.
  r = run("debug workflow --config " + dir_ + "/staged.yaml --no-color");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warmup/global_step_2/huggingface"), std::string::npos) << r.err;
}

TEST_F(RunCmds, SummaryGoesToStdoutAndABf16ModelIsExportedAsBf16) {
  Result r =
      run("init-model --arch qwen2 --hidden 32 --layers 1 --heads 2 --intermediate 64 --max-pos 64 "
          "--tokenizer bytes --seed 3 --dtype bf16 --out " +
          dir_ + "/model_bf16");
  ASSERT_EQ(r.code, 0) << r.err;
  std::ofstream(dir_ + "/bf16.yaml") << config_text("bf16_run", "");
  const std::string set = " --set model.model_path=" + dir_ + "/model_bf16 --set buffer.total_steps=1";
  r = run("run --config " + dir_ + "/bf16.yaml" + set);
  ASSERT_EQ(r.code, 0) << r.err;
  // The summary is the whole of stdout (`trinity run ... > summary.txt`); logs stay on stderr.
  EXPECT_EQ(r.out.find("\n==== trinity run summary ===="), 0u) << r.out;
  const std::string ckpt = dir_ + "/ck/run_cmds/bf16_run/global_step_1/huggingface";
  EXPECT_NE(r.out.find("  checkpoint: " + ckpt), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("trinity run summary"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find(" info "), std::string::npos) << r.out;
  // trainer.save_hf_dtype: auto -> the bf16 base model's checkpoint is bf16 (header read by hand),
  // and the exact fp32 weights sit next to it for resume.
  std::ifstream in(ckpt + "/model.safetensors", std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  std::string h(static_cast<size_t>(n), '\0');
  in.read(h.data(), static_cast<std::streamsize>(n));
  const json header = json::parse(h);
  for (const auto& [name, e] : header.items()) {
    if (name != "__metadata__") {
      EXPECT_EQ(e["dtype"], "BF16") << name;
    }
  }
  EXPECT_EQ(json::parse(slurp(ckpt + "/config.json"))["torch_dtype"], "bfloat16");
  EXPECT_TRUE(fs::exists(dir_ + "/ck/run_cmds/bf16_run/global_step_1/actor/model.safetensors"));
  // A value outside the choices is a config error naming the key.
  r = run("config check --config " + dir_ + "/bf16.yaml --set trainer.save_hf_dtype=float64");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("trainer.save_hf_dtype"), std::string::npos) << r.err;
}

}  // namespace
