// The task pipeline end to end: `trinity data process` (dedup, a length filter and two
// rollout_pass_rate scorings with the run's own model: the feature columns BOTS needs), the report,
// reuse of an up-to-date output, the refusal of a stale one and --force; then `trinity run` that
// trains on the processed taskset with difficulty_based on the scored columns, and a run that
// processes its taskset itself before training; llm_score against a fake OpenAI API as the judge, in
// the task pipeline (scores and filters rows) and in the experience pipeline of a run (scores every
// experience, reward_shaping_mapper adds the score).
#include <gtest/gtest.h>

#include "common/fake_openai.h"
#include "e2e_util.h"

using namespace trinity::test;

namespace {

std::string pipeline_yaml(const std::string& root, const std::string& name, const std::string& out, int top_k) {
  std::string y = base_yaml(root, name);
  const std::string from = "path: " + root + "/data/train.jsonl";
  y.replace(y.find(from), from.size(),
            "path: " + out +
                "\n      data_selector: {selector_type: difficulty_based, feature_keys: [weak_pass_rate, "
                "strong_pass_rate], kwargs: {target_reward: 0.5, tau: 0}}");
  y += "data_processor:\n"
       "  experience_pipeline:\n    operators: [{name: pass_rate_calculator}]\n"
       "  task_pipeline:\n"
       "    inputs: [" +
       root + "/data/train.jsonl, " + root +
       "/data/dup.jsonl]\n"
       "    target_fields: [prompt]\n"
       "    top_k: " +
       std::to_string(top_k) +
       "\n"
       "    operators:\n"
       "      - {name: document_deduplicator}\n"
       "      - {name: text_length_filter, args: {min_len: 4}}\n"
       "      - {name: rollout_pass_rate, args: {repeat_times: 2, temperature: 1.5, field: weak_pass_rate}}\n"
       "      - {name: rollout_pass_rate, args: {repeat_times: 2, temperature: 0.7, field: strong_pass_rate}}\n";
  return y;
}

std::vector<json> read_jsonl(const std::string& path) {
  std::vector<json> rows;
  std::istringstream in(slurp(path));
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) rows.push_back(json::parse(l));
  return rows;
}

}  // namespace

TEST(TaskPipelineE2E, DataProcessThenBotsRun) {
  const std::string& root = shared_root();
  // dup.jsonl: the first 8 training rows again, which the deduplicator removes.
  {
    std::istringstream in(slurp(root + "/data/train.jsonl"));
    std::string l, dup;
    for (int i = 0; i < 8 && std::getline(in, l); ++i) dup += l + "\n";
    write_text(root + "/data/dup.jsonl", dup);
  }
  const std::string out = root + "/processed_a";
  fs::remove_all(out);
  fs::remove_all(job_dir(root, "tp_run"));
  const std::string cfg = write_config(root, "tp_run", pipeline_yaml(root, "tp_run", out, 48));
  const RunOut r = trinity::test::trinity({"data", "process", "--config", cfg}, root + "/tp1.log", 120);
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto rows = read_jsonl(out + "/output.jsonl");
  ASSERT_EQ(rows.size(), 48u);
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_TRUE(rows[i].at("weak_pass_rate").is_number()) << rows[i].dump();
    ASSERT_TRUE(rows[i].at("strong_pass_rate").is_number()) << rows[i].dump();
    if (i > 0) {
      EXPECT_GE(rows[i - 1].at("priority").get<double>(), rows[i].at("priority").get<double>());
    }
  }
  const json rep = json::parse(slurp(out + "/task_pipeline_report.json"));
  EXPECT_EQ(rep.at("rows_in"), 72);  // 64 + 8 duplicates
  EXPECT_EQ(rep.at("operators").at(0).at("rows_out"), 64);
  EXPECT_EQ(rep.at("rows_out"), 48);
  EXPECT_TRUE(rep.at("histograms").contains("weak_pass_rate"));
  EXPECT_NE(r.out.find("document_deduplicator"), std::string::npos) << r.out;

  // Up to date: not processed again. A changed config meets the old output: refused, then --force.
  const RunOut again = trinity::test::trinity({"data", "process", "--config", cfg}, root + "/tp2.log");
  ASSERT_EQ(again.rc, 0) << again.out;
  EXPECT_NE(again.out.find("up to date"), std::string::npos) << again.out;
  const std::string cfg40 = write_config(root, "tp_run40", pipeline_yaml(root, "tp_run", out, 40));
  const RunOut stale = trinity::test::trinity({"data", "process", "--config", cfg40}, root + "/tp3.log");
  EXPECT_NE(stale.rc, 0);
  EXPECT_NE(stale.out.find("already exists and was made from other inputs or another pipeline config"),
            std::string::npos)
      << stale.out;
  EXPECT_EQ(read_jsonl(out + "/output.jsonl").size(), 48u) << "a refused run must not touch the output";

  // trinity run trains on it with BOTS over the two scored columns (the pipeline output is reused).
  const RunOut run =
      trinity::test::trinity({"run", "--config", cfg, "--set", "buffer.total_steps=2"}, root + "/tp4.log", 120);
  ASSERT_EQ(run.rc, 0) << run.out;
  EXPECT_NE(run.out.find("reusing it"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("48 tasks from " + out), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("bad rows skipped"), std::string::npos) << "the report file was read as data: " << run.out;
  const auto m = read_metrics(job_dir(root, "tp_run"));
  EXPECT_EQ(metric_steps(m, "explorer", "experience_pipeline/selection/valid_ratio"), (std::vector<int64_t>{1, 2}));

  const RunOut forced =
      trinity::test::trinity({"data", "process", "--config", cfg40, "--force"}, root + "/tp5.log", 120);
  ASSERT_EQ(forced.rc, 0) << forced.out;
  EXPECT_EQ(read_jsonl(out + "/output.jsonl").size(), 40u);
}

TEST(TaskPipelineE2E, RunProcessesItsTasksetFirst) {
  const std::string& root = shared_root();
  write_text(root + "/data/dup.jsonl", "");
  const std::string out = root + "/processed_b";
  fs::remove_all(out);
  fs::remove_all(job_dir(root, "tp_fresh"));
  std::string y = pipeline_yaml(root, "tp_fresh", out, -1);
  const RunOut run = trinity::test::trinity(
      {"run", "--config", write_config(root, "tp_fresh", y), "--set", "buffer.total_steps=1"}, root + "/tp6.log", 120);
  ASSERT_EQ(run.rc, 0) << run.out;
  EXPECT_NE(run.out.find("task pipeline: wrote 64 rows"), std::string::npos) << run.out;
  EXPECT_TRUE(fs::exists(out + "/task_pipeline_report.json"));
  // config check names a bad task operator before anything runs.
  y.replace(y.find("{name: document_deduplicator}"), 29, "{name: document_dedup}");
  const RunOut bad =
      trinity::test::trinity({"config", "check", "--config", write_config(root, "tp_bad", y)}, root + "/tp7.log");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.out.find("unknown task operator 'document_dedup'"), std::string::npos) << bad.out;
}

// The judge scores the text it is shown: 9 when it holds a "1", else 2 ("Score: N").
std::pair<int, std::string> judge(const json& body) {
  const std::string text = body["messages"].back()["content"].get<std::string>();
  return {200, chat_completion({text.find('1') != std::string::npos ? "Score: 9" : "I give it 2/10"})};
}

TEST(TaskPipelineE2E, LlmScoreWithAnOpenAIJudge) {
  const std::string& root = shared_root();
  FakeOpenAI api(judge);
  setenv("TRINITY_JUDGE_KEY", "sk-judge", 1);
  const std::string out = root + "/processed_llm";
  fs::remove_all(out);
  fs::remove_all(job_dir(root, "tp_llm"));
  std::string y = base_yaml(root, "tp_llm");
  const std::string from = "path: " + root + "/data/train.jsonl";
  y.replace(y.find(from), from.size(), "path: " + out);
  const std::string judge_args = "api_url: " + api.base_url() + ", model: judge-7b, api_key_env: TRINITY_JUDGE_KEY";
  y += "data_processor:\n"
       "  experience_pipeline:\n    operators:\n"
       "      - {name: llm_score, args: {" +
       judge_args +
       ", field: judge_score, template: 'Q: {prompt} A: {response}'}}\n"
       "      - {name: reward_shaping_mapper, args: {reward_shaping_configs: [{stats_key: judge_score, op_type: ADD, "
       "weight: 0.5}]}}\n"
       "  task_pipeline:\n"
       "    inputs: [" +
       root +
       "/data/train.jsonl]\n"
       "    operators:\n"
       "      - {name: llm_score, args: {" +
       judge_args + ", template: '{prompt}', min_score: 0.5, concurrency: 4}}\n";
  const std::string cfg = write_config(root, "tp_llm", y);
  const RunOut r =
      trinity::test::trinity({"run", "--config", cfg, "--set", "buffer.total_steps=2"}, root + "/tp8.log", 120);
  ASSERT_EQ(r.rc, 0) << r.out;
  // Task rows: kept exactly when the prompt holds a '1', each with its score.
  size_t with_one = 0;
  {
    std::istringstream in(slurp(root + "/data/train.jsonl"));
    for (std::string l; std::getline(in, l);)
      if (!l.empty() && json::parse(l).at("prompt").get<std::string>().find('1') != std::string::npos) ++with_one;
  }
  const auto rows = read_jsonl(out + "/output.jsonl");
  ASSERT_EQ(rows.size(), with_one);
  for (const auto& row : rows) EXPECT_DOUBLE_EQ(row.at("llm_quality_score").get<double>(), 0.9) << row.dump();
  // Every request: the model name, the key, temperature 0; 64 task rows + 2 steps x 2 tasks x 2 runs.
  const auto reqs = api.requests();
  ASSERT_EQ(reqs.size(), 64u + 8u);
  for (const auto& q : reqs) {
    EXPECT_EQ(q.authorization, "Bearer sk-judge");
    EXPECT_EQ(q.body.at("model"), "judge-7b");
  }
  const auto m = read_metrics(job_dir(root, "tp_llm"));
  EXPECT_EQ(metric_steps(m, "explorer", "experience_pipeline/mean_score"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(metric_sum(m, "explorer", "experience_pipeline/error_count"), 0.0);
  EXPECT_TRUE(has_metric(m, "explorer", "experience_pipeline/reward_diff/mean"));
  unsetenv("TRINITY_JUDGE_KEY");
}
