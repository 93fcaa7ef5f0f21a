// Bench mode with model.external_model, end to end (real `trinity` binary): a fake OpenAI API in this
// process answers some arithmetic eval tasks right and some wrong; the bench reports the accuracy and
// reward that follow, labelled with the API's model name, without loading local weights or resolving
// model_path on the Hub; the requests carry the model name, the Bearer key from the environment and
// max_completion_tokens. A missing base URL variable and enable outside bench mode are clear errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "common/fake_openai.h"
#include "e2e_util.h"

namespace trinity::test {
namespace {

// Eval rows and the fake API's answers: three right, one wrong (7+7 is not 15).
const std::map<std::string, std::string> kAnswers = {{"1+2=", "3"}, {"3+4=", "7"}, {"10+5=", "15"}, {"7+7=", "15"}};
const char* kEvalRows =
    "{\"prompt\": \"1+2=\", \"answer\": \"3\"}\n"
    "{\"prompt\": \"3+4=\", \"answer\": \"7\"}\n"
    "{\"prompt\": \"10+5=\", \"answer\": \"15\"}\n"
    "{\"prompt\": \"7+7=\", \"answer\": \"14\"}\n";

const std::string& root() {
  static const std::string r = [] {
    const std::string d = (fs::temp_directory_path() / ("trinity-external-test-" + std::to_string(getpid()))).string();
    fs::remove_all(d);
    write_text(d + "/eval.jsonl", kEvalRows);
    return d;
  }();
  return r;
}

// A bench config whose rollout model is the external API; `model_lines` go under model:.
std::string bench_yaml(const std::string& name, const std::string& model_lines) {
  return "mode: bench\nproject: t\nname: " + name + "\ncheckpoint_root_dir: " + root() +
         "/ckpt\n"
         "model:\n" +
         model_lines +
         "  max_prompt_tokens: 24\n"
         "  max_response_tokens: 6\n"
         "  external_model:\n"
         "    enable: true\n"
         "    base_url_env: TRINITY_FAKE_API_BASE\n"
         "    api_key_env: TRINITY_FAKE_API_KEY\n"
         "buffer:\n"
         "  explorer_input:\n"
         "    eval_tasksets:\n"
         "      - name: arith_eval\n"
         "        path: " +
         root() +
         "/eval.jsonl\n"
         "        format: {prompt_key: prompt, response_key: answer}\n"
         "        rollout_args: {temperature: 0.0}\n"
         "    default_workflow_type: arithmetic_workflow\n"
         "explorer:\n"
         "  runner_per_model: 2\n"
         "  max_retry_times: 0\n";
}

// The canned answer to a request's last user message ("?" for an unknown prompt).
std::pair<int, std::string> answer(const json& body) {
  const std::string prompt = body["messages"].back()["content"].get<std::string>();
  const auto it = kAnswers.find(prompt);
  return {200, chat_completion({it == kAnswers.end() ? "?" : it->second}, "stop", 8, 2)};
}

TEST(ExternalModelBench, ReportsTheApisAccuracyAndSendsNameKeyAndLimits) {
  FakeOpenAI api(answer);
  setenv("TRINITY_FAKE_API_BASE", (api.base_url() + "/").c_str(), 1);  // the trailing '/' is dropped
  setenv("TRINITY_FAKE_API_KEY", "sk-e2e", 1);
  setenv("HF_HUB_OFFLINE", "1", 1);  // model_path is a Hub-like name: it must not be looked up at all
  const std::string name = "ext";
  const std::string cfg = write_config(root(), name, bench_yaml(name, "  model_path: org/remote-model\n"));
  const RunOut r = trinity({"bench", "--config", cfg}, root() + "/ext.log");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("step 0 (external model org/remote-model)"), std::string::npos) << r.out;
  const auto m = read_metrics(job_dir(root(), name));
  EXPECT_EQ(metric_values(m, "bench", "bench/arith_eval/accuracy/mean@1"), std::vector<double>{0.75}) << r.out;
  EXPECT_EQ(metric_values(m, "bench", "bench/arith_eval/reward/mean@1"), std::vector<double>{0.75});
  EXPECT_EQ(metric_values(m, "bench", "bench/arith_eval/finished_task_count"), std::vector<double>{4});
  EXPECT_EQ(metric_values(m, "bench", "bench/arith_eval/usage/prompt_tokens/mean@1"), std::vector<double>{8});
  EXPECT_EQ(metric_steps(m, "bench", "bench/arith_eval/accuracy/mean@1"), std::vector<int64_t>{0});
  const auto reqs = api.requests();
  ASSERT_EQ(reqs.size(), 4u);
  for (const auto& q : reqs) {
    EXPECT_EQ(q.authorization, "Bearer sk-e2e");
    EXPECT_EQ(q.body["model"], "org/remote-model");
    EXPECT_EQ(q.body["max_completion_tokens"], 6);  // model.max_response_tokens
    EXPECT_EQ(q.body["temperature"], 0.0);          // the eval taskset's rollout_args
    EXPECT_EQ(q.body["n"], 1);
  }
}

TEST(ExternalModelBench, ModelNameWinsAndTheKeyDefaultsToEmpty) {
  FakeOpenAI api(answer);
  setenv("TRINITY_FAKE_API_BASE", api.base_url().c_str(), 1);
  unsetenv("TRINITY_FAKE_API_KEY");
  const std::string name = "ext_named";
  const std::string cfg = write_config(root(), name, bench_yaml(name, "  model_path: org/remote-model\n"));
  const RunOut r =
      trinity({"run", "--config", cfg, "--set", "model.external_model.model_name=gpt-test"}, root() + "/ext_named.log");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto reqs = api.requests();
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_EQ(reqs[0].body["model"], "gpt-test");
  EXPECT_EQ(reqs[0].authorization, "Bearer EMPTY");
  EXPECT_EQ(metric_values(read_metrics(job_dir(root(), name)), "bench", "bench/arith_eval/accuracy/mean@1"),
            std::vector<double>{0.75});
}

TEST(ExternalModelBench, MissingBaseUrlVariableIsAClearError) {
  unsetenv("TRINITY_FAKE_API_BASE");
  const std::string name = "ext_noenv";
  const std::string cfg = write_config(root(), name, bench_yaml(name, "  model_path: org/remote-model\n"));
  const RunOut r = trinity({"run", "--config", cfg}, root() + "/ext_noenv.log");
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("[explorer] model.external_model.base_url_env: environment variable TRINITY_FAKE_API_BASE is "
                       "not set"),
            std::string::npos)
      << r.out;
}

TEST(ExternalModelBench, EnableOutsideBenchModeIsAConfigError) {
  const std::string name = "ext_both";
  const std::string cfg = write_config(root(), name, bench_yaml(name, "  model_path: org/remote-model\n"));
  const RunOut r = trinity({"config", "check", "--config", cfg, "--set", "mode=both"}, root() + "/ext_both.log");
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("model.external_model.enable: an external model is bench-mode only"), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace trinity::test
