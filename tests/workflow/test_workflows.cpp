// Workflow registry (errors, did-you-mean, overrides) and the single-turn workflows against the
// scripted FakeModelClient: one chat request with n = repeat_times, exact ids, rewards and metrics,
// reply prefix, math / math_boxed / countdown presets, arithmetic_workflow and its data generators.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <unistd.h>

#include "core/error.h"
#include "buffer/dataset.h"
#include "core/file.h"
#include "workflow/arithmetic.h"
#include "workflow/fake_client.h"
#include "workflow/simple_workflow.h"
#include "workflow/workflow.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;
using testing::FakeModelClient;
using testing::FakeReply;

FakeModelClient byte_client() { return FakeModelClient(testing::byte_tokenizer(), {258}); }

std::vector<json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  std::vector<json> rows;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) rows.push_back(json::parse(line));
  return rows;
}

std::string tmp_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / ("trinity_wf_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}

TEST(WorkflowRegistry, BuiltinsAndUnknownName) {
  for (const char* n : {"simple_workflow", "math_workflow", "math_boxed_workflow", "countdown_workflow",
                        "frozen_lake_workflow", "arithmetic_workflow"})
    EXPECT_TRUE(has_workflow(n)) << n;
  buffer::Task t;
  try {
    make_workflow("math_workfow", t);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("[workflow] unknown workflow 'math_workfow' (did you mean 'math_workflow'?); registered: ", 0), 0u) << m;
    EXPECT_NE(m.find("frozen_lake_workflow"), std::string::npos);
  }
  try {
    make_workflow("zzzzzzzzzzzzzzzzzzzzzzzzzzz", t);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).find("did you mean"), std::string::npos) << e.what();
  }
}

class ConstWorkflow : public Workflow {
 public:
  std::vector<buffer::Experience> run(RunContext&) override { return {}; }
};

TEST(WorkflowRegistry, RegisterOverridesAndIsThreadSafe) {
  std::vector<std::thread> th;
  for (int i = 0; i < 8; ++i)
    th.emplace_back([i] {
      for (int k = 0; k < 50; ++k) {
        register_workflow("test_wf_" + std::to_string(i), [](const buffer::Task&) { return std::make_unique<ConstWorkflow>(); });
        (void)workflow_names();
        (void)has_workflow("simple_workflow");
      }
    });
  for (auto& t : th) t.join();
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(has_workflow("test_wf_" + std::to_string(i)));
  buffer::Task t;
  EXPECT_NE(make_workflow("test_wf_3", t), nullptr);
}

TEST(SimpleWorkflow, OneChatRequestWithNSamples) {
  auto m = byte_client();
  m.push({"<think>2+2=4</think><answer>4</answer>"});
  m.push({"the answer is 5"});
  m.push({"<think>long</think><answer>4", "length"});
  buffer::Task t;
  t.task_desc = "What is 2+2?";
  t.truth = "4";
  t.system_prompt = "Be brief.";
  t.reward_fn = "math_reward";
  t.rollout_args.temperature = 0.7;
  t.rollout_args.max_tokens = 64;
  auto wf = make_workflow("simple_workflow", t);
  EXPECT_TRUE(wf->can_repeat());
  Rng rng(1);
  RunContext ctx;
  ctx.model = &m;
  ctx.repeat_times = 3;
  ctx.run_id_base = 6;
  ctx.rng = &rng;
  const auto exps = wf->run(ctx);
  ASSERT_EQ(exps.size(), 3u);
  const auto calls = m.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].kind, "chat");
  EXPECT_EQ(calls[0].opt.n, 3);
  EXPECT_EQ(*calls[0].opt.temperature, 0.7);
  EXPECT_EQ(*calls[0].opt.max_tokens, 64);
  EXPECT_TRUE(calls[0].opt.seed.has_value());
  const auto msgs = json::parse(calls[0].messages_json);
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0]["role"], "system");
  EXPECT_EQ(msgs[1]["content"], "What is 2+2?");
  for (size_t i = 0; i < 3; ++i) {
    const auto& e = exps[i];
    const auto& s = calls[0].samples[i];
    EXPECT_EQ(e.eid.run, 6 + static_cast<int64_t>(i));
    EXPECT_EQ(e.prompt_length, static_cast<int64_t>(s.prompt_ids.size()));
    std::vector<int32_t> expect = s.prompt_ids;
    expect.insert(expect.end(), s.ids.begin(), s.ids.end());
    EXPECT_EQ(e.tokens, expect);
    EXPECT_EQ(e.logprobs, s.logprobs);
    EXPECT_EQ(e.action_mask, std::vector<uint8_t>(s.ids.size(), 1));
    EXPECT_EQ(e.model_version, 3);
    EXPECT_EQ(e.response_text, s.text);
    EXPECT_EQ(e.prompt_text, calls[0].prompt_text);
    EXPECT_EQ(*e.reward, e.metrics.at("accuracy") + e.metrics.at("format_score"));
    EXPECT_EQ(json::parse(e.info)["finish_reason"], s.finish_reason);
  }
  EXPECT_DOUBLE_EQ(*exps[0].reward, 1.1);
  EXPECT_DOUBLE_EQ(*exps[1].reward, -0.1);
  EXPECT_EQ(exps[2].truncate_status, buffer::TruncateStatus::kResponseTruncated);
  EXPECT_EQ(exps[0].truncate_status, buffer::TruncateStatus::kNone);
  EXPECT_EQ(json::parse(exps[0].messages).back()["content"], "<think>2+2=4</think><answer>4</answer>");
}

TEST(SimpleWorkflow, ReplyPrefixContinuesTheTemplate) {
  auto m = byte_client();
  m.push({"4</answer>"});
  buffer::Task t;
  t.task_desc = "2+2?";
  t.truth = "4";
  t.reply_prefix = "<answer>";
  t.reward_fn = "accuracy_reward";
  RunContext ctx;
  ctx.model = &m;
  const auto e = make_workflow("simple_workflow", t)->run(ctx).at(0);
  const auto calls = m.calls();
  ASSERT_EQ(calls[0].kind, "generate");
  EXPECT_EQ(calls[0].prompt_text, "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n<answer>");
  EXPECT_EQ(e.metrics.at("accuracy"), 1.0);
}

TEST(SimpleWorkflow, NeedsARewardFn) {
  buffer::Task t;
  try {
    make_workflow("simple_workflow", t);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("reward_fn"), std::string::npos);
  }
  t.reward_fn = "countdown_rewrd";
  EXPECT_THROW(make_workflow("simple_workflow", t), ConfigError);
}

TEST(MathWorkflow, DefaultPromptAndReward) {
  auto m = byte_client();
  m.push({"<think>x</think> <answer>\\frac{1}{2}</answer>"});
  buffer::Task t;
  t.task_desc = "Half of one?";
  t.truth = "0.5";
  RunContext ctx;
  ctx.model = &m;
  const auto e = make_workflow("math_workflow", t)->run(ctx).at(0);
  const auto msgs = json::parse(m.calls()[0].messages_json);
  EXPECT_EQ(msgs[0]["content"], math_system_prompt("deepseek_like"));
  EXPECT_DOUBLE_EQ(*e.reward, 1.1);
}

TEST(MathWorkflow, BoxedPromptSwitchesReward) {
  auto m = byte_client();
  m.push({"so \\boxed{3}"});
  buffer::Task t;
  t.task_desc = "1+2";
  t.truth = "3";
  t.system_prompt = "boxed_no_think";
  RunContext ctx;
  ctx.model = &m;
  const auto e = make_workflow("math_workflow", t)->run(ctx).at(0);
  EXPECT_EQ(e.metrics.at("accuracy"), 1.0);
  EXPECT_EQ(e.metrics.at("format_score"), 0.0);
}

TEST(MathBoxedWorkflow, ArgsAndBaseModelPrompt) {
  auto m = byte_client();
  m.push({"\\boxed{3}"});
  buffer::Task t;
  t.task_desc = "1+2";
  t.truth = "3";
  t.workflow_args = R"({"with_think": true, "use_base": true, "format_score_coef": 0.5})";
  RunContext ctx;
  ctx.model = &m;
  const auto e = make_workflow("math_boxed_workflow", t)->run(ctx).at(0);
  const auto calls = m.calls();
  EXPECT_EQ(calls[0].kind, "generate");
  EXPECT_EQ(calls[0].prompt_text, "System:" + math_system_prompt("boxed_with_think") + "\nUser:\n1+2\nAssistant:\n");
  EXPECT_EQ(e.metrics.at("accuracy"), 1.0);
  EXPECT_EQ(e.metrics.at("format_score"), -0.5);
  t.workflow_args = R"({"with_thinking": true})";
  EXPECT_THROW(make_workflow("math_boxed_workflow", t), ConfigError);
}

TEST(CountdownWorkflow, DefaultAndViaSimpleWorkflow) {
  buffer::Task t;
  t.task_desc = "Using [3, 5] make 8";
  t.truth = R"({"target": 8, "numbers": [3, 5]})";
  for (const char* wf : {"countdown_workflow", "simple_workflow"}) {
    auto m = byte_client();
    m.push({"<answer>3+5</answer>"});
    m.push({"<answer>3*5</answer>"});
    buffer::Task tt = t;
    if (std::string(wf) == "simple_workflow") tt.reward_fn = "countdown_reward";
    RunContext ctx;
    ctx.model = &m;
    ctx.repeat_times = 2;
    const auto exps = make_workflow(wf, tt)->run(ctx);
    ASSERT_EQ(exps.size(), 2u);
    EXPECT_EQ(*exps[0].reward, 1.0) << wf;
    EXPECT_EQ(*exps[1].reward, 0.1) << wf;
    EXPECT_EQ(exps[0].metrics.at("score"), 1.0);
  }
}

TEST(ArithmeticWorkflow, RewardNeedsExactSumAndEos) {
  auto m = byte_client();
  m.push({"46"});
  m.push({" 46 "});
  m.push({"36"});
  m.push({"46", "length"});
  m.push({"466"});
  buffer::Task t;
  t.task_desc = "12+34=";
  t.truth = "46";
  auto wf = make_workflow("arithmetic_workflow", t);
  EXPECT_TRUE(wf->can_repeat());
  RunContext ctx;
  ctx.model = &m;
  ctx.repeat_times = 5;
  const auto exps = wf->run(ctx);
  ASSERT_EQ(exps.size(), 5u);
  const auto calls = m.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].kind, "chat");  // formatted like the SFT demonstrations (chat template)
  EXPECT_EQ(calls[0].prompt_text, "<|im_start|>user\n12+34=<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(calls[0].opt.n, 5);
  const double want[] = {1, 1, 0, 0, 0};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(*exps[i].reward, want[i]) << i;
    EXPECT_EQ(exps[i].metrics.at("accuracy"), want[i]);
  }
  EXPECT_EQ(exps[0].tokens.back(), 258);  // EOS kept in the tokens
}

TEST(ArithmeticWorkflow, RowFormsAndErrors) {
  buffer::Task t;
  t.raw = R"({"a": 7, "b": 5})";
  auto m = byte_client();
  m.push({"12"});
  RunContext ctx;
  ctx.model = &m;
  EXPECT_EQ(*make_workflow("arithmetic_workflow", t)->run(ctx).at(0).reward, 1.0);
  EXPECT_EQ(m.calls()[0].prompt_text, "<|im_start|>user\n7+5=<|im_end|>\n<|im_start|>assistant\n");
  buffer::Task plain = t;  // workflow_args plain_text: a raw completion without the template
  plain.workflow_args = R"({"plain_text": true})";
  m.push({"12"});
  EXPECT_EQ(*make_workflow("arithmetic_workflow", plain)->run(ctx).at(0).reward, 1.0);
  EXPECT_EQ(m.calls()[1].kind, "generate");
  EXPECT_EQ(m.calls()[1].prompt_text, "7+5=");
  buffer::Task no_truth;
  no_truth.task_desc = "20+22=";
  m.push({"42"});
  EXPECT_EQ(*make_workflow("arithmetic_workflow", no_truth)->run(ctx).at(0).reward, 1.0);
  buffer::Task bad_args = t;
  bad_args.workflow_args = R"({"plain": true})";
  EXPECT_THROW(make_workflow("arithmetic_workflow", bad_args), ConfigError);
  buffer::Task bad;
  bad.raw = R"({"a": "x"})";
  EXPECT_THROW(make_workflow("arithmetic_workflow", bad), ValueError);
  bad.task_desc = "hello";
  EXPECT_THROW(make_workflow("arithmetic_workflow", bad), ValueError);
}

TEST(ArithmeticData, TasksetRows) {
  const std::string dir = tmp_dir("taskset");
  write_arithmetic_taskset(dir + "/t.jsonl", 200, 5);
  const auto rows = read_jsonl(dir + "/t.jsonl");
  ASSERT_EQ(rows.size(), 200u);
  std::set<std::string> distinct;
  for (const auto& r : rows) {
    ASSERT_EQ(r.size(), 2u);
    const std::string p = r.at("prompt");
    ASSERT_EQ(p.back(), '=');
    const auto plus = p.find('+');
    const int a = std::stoi(p.substr(0, plus)), b = std::stoi(p.substr(plus + 1));
    EXPECT_GE(a, 10);
    EXPECT_LE(a, 99);
    EXPECT_GE(b, 10);
    EXPECT_LE(b, 99);
    EXPECT_EQ(r.at("answer"), std::to_string(a + b));
    distinct.insert(p);
  }
  EXPECT_GT(distinct.size(), 150u);
  write_arithmetic_taskset(dir + "/t2.jsonl", 200, 5);
  EXPECT_EQ(file::read_all(dir + "/t.jsonl"), file::read_all(dir + "/t2.jsonl"));
  write_arithmetic_taskset(dir + "/t3.jsonl", 5, 1, 3);
  for (const auto& r : read_jsonl(dir + "/t3.jsonl")) EXPECT_EQ(r.at("prompt").get<std::string>().size(), 8u);
  EXPECT_THROW(write_arithmetic_taskset(dir + "/x.jsonl", 1, 1, 0), ValueError);
  std::filesystem::remove_all(dir);
}

TEST(ArithmeticData, SftCorrectFractionAndRealMistakes) {
  EXPECT_EQ(sum_without_carry(18, 25), 33);
  EXPECT_EQ(sum_without_carry(99, 99), 188);
  EXPECT_EQ(sum_without_carry(87, 26), 103);
  EXPECT_EQ(sum_without_carry(91, 20), 111);  // only a leading carry: same as the true sum
  EXPECT_EQ(sum_without_carry(12, 34), 46);
  const std::string dir = tmp_dir("sft");
  write_arithmetic_sft(dir + "/s.jsonl", 1000, 0.3, 9);
  const auto rows = read_jsonl(dir + "/s.jsonl");
  ASSERT_EQ(rows.size(), 1000u);
  int correct = 0, first_half_correct = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    ASSERT_EQ(r.size(), 2u);
    const std::string p = r.at("prompt");
    const auto plus = p.find('+');
    const int a = std::stoi(p.substr(0, plus)), b = std::stoi(p.substr(plus + 1, p.size() - plus - 2));
    const std::string resp = r.at("response");
    if (resp == std::to_string(a + b)) {
      ++correct;
      first_half_correct += i < 500;
    } else {
      EXPECT_EQ(resp, std::to_string(sum_without_carry(a, b))) << p;  // the carry was forgotten
      EXPECT_NE(std::stoi(resp), a + b);
    }
  }
  EXPECT_NEAR(correct / 1000.0, 0.3, 0.02);
  EXPECT_GT(first_half_correct, 100);  // spread over the file, not a block
  EXPECT_LT(first_half_correct, 200);
  write_arithmetic_sft(dir + "/all.jsonl", 50, 1.0, 9);
  for (const auto& r : read_jsonl(dir + "/all.jsonl")) {
    const std::string p = r.at("prompt");
    const auto plus = p.find('+');
    EXPECT_EQ(r.at("response"), std::to_string(std::stoi(p.substr(0, plus)) + std::stoi(p.substr(plus + 1))));
  }
  EXPECT_THROW(write_arithmetic_sft(dir + "/x.jsonl", 10, 1.5, 1), ValueError);
  std::filesystem::remove_all(dir);
}

// The generated taskset loads through the buffer layer with prompt_key=prompt, response_key=answer
// and runs through arithmetic_workflow.
TEST(ArithmeticData, LoadsAsTasksetAndRuns) {
  const std::string dir = tmp_dir("load");
  write_arithmetic_taskset(dir + "/train.jsonl", 4, 3);
  buffer::TasksetConfig cfg;
  cfg.path = dir + "/train.jsonl";
  cfg.format.prompt_key = "prompt";
  cfg.format.response_key = "answer";
  cfg.default_workflow_type = "arithmetic_workflow";
  cfg.strict = true;
  const auto ts = buffer::Taskset::load(cfg);
  ASSERT_EQ(ts.size(), 4u);
  const buffer::Task& t = ts.at(0);
  EXPECT_EQ(t.workflow, "arithmetic_workflow");
  const auto row = json::parse(t.raw);
  EXPECT_EQ(t.task_desc, row["prompt"]);
  EXPECT_EQ(t.truth, row["answer"]);
  auto m = byte_client();
  m.push({t.truth});
  RunContext ctx;
  ctx.model = &m;
  EXPECT_EQ(*make_workflow(t.workflow, t)->run(ctx).at(0).reward, 1.0);
  std::filesystem::remove_all(dir);
}

TEST(ArithmeticData, MakeDataCli) {
  const std::string bin = std::string(TRINITY_BINARY_DIR) + "/trinity";
  if (!std::filesystem::exists(bin)) GTEST_SKIP() << "trinity binary not built";
  const std::string dir = tmp_dir("cli");
  const std::string cmd = bin + " make-data arithmetic --out " + dir + "/d --train 30 --eval 7 --sft 20 --sft-correct 0.5 --seed 3 > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(read_jsonl(dir + "/d/train.jsonl").size(), 30u);
  EXPECT_EQ(read_jsonl(dir + "/d/eval.jsonl").size(), 7u);
  const auto sft = read_jsonl(dir + "/d/sft.jsonl");
  ASSERT_EQ(sft.size(), 20u);
  EXPECT_TRUE(sft[0].contains("prompt") && sft[0].contains("response"));
  EXPECT_NE(std::system((bin + " make-data arithmetic --out " + dir + " --sft-correct 2 2> /dev/null").c_str()), 0);
  EXPECT_NE(std::system((bin + " make-data cats --out " + dir + " 2> /dev/null").c_str()), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trinity::workflow
