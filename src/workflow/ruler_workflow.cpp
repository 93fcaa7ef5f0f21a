// math_ruler_workflow and math_trainable_ruler_workflow (RULER, trinity-rft.md §5.5). Both roll out
// the policy once with n = G = repeat_times and compute the gold reward (task.reward_fn, default
// math_reward with the deepseek_like system prompt) as metrics only (its components + gold_reward).
//   math_ruler_workflow: explorer.auxiliary_models[0] judges all G candidates in one call (its own
//     sampling defaults); reward_i = the clipped score s_i; a list that does not parse or has another
//     length than G gives all zeros and judge_success 0 (not a failed run).
//   math_trainable_ruler_workflow: the policy judges itself. The first draw of ctx.rng decides
//     whether ground truth is "available" (probability 0.2). If so, the policy gets the gold reward
//     and n = G judge samples become extra experiences (eid.batch tag "-ruler": their own group) with
//     reward 1 - mean_i |s_i - (gold_i + 0.1) / 1.2| (0 when the list does not parse) and metrics
//     judge_success, reward_for_judger. Otherwise one judge sample is drawn and the policy's reward
//     is its scores (zeros when it does not parse). Judge calls use the task's rollout_args.
// Fixed against upstream: every judge sample is parsed (upstream stops at the first one without a
// list), and the MAE is computed (upstream's ndarray.abs() raises, so its judge reward stays 0).
#include <cmath>
#include <nlohmann/json.hpp>

#include "workflow/builtins.h"
#include "workflow/judge.h"
#include "workflow/rewards/reward_fn.h"
#include "workflow/ruler.h"
#include "workflow/simple_workflow.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;

// The gold reward function and the policy system prompt, as upstream's reset() picks them.
struct Gold {
  RewardFn fn;
  std::string system_prompt;
};

Gold gold_for(const buffer::Task& task) {
  Gold g;
  const bool math = task.reward_fn.empty() || task.reward_fn == "math_reward";
  g.fn = make_reward_fn(task.reward_fn.empty() ? "math_reward" : task.reward_fn, task.reward_fn_args);
  g.system_prompt = task.system_prompt;
  if (math && g.system_prompt.empty()) g.system_prompt = math_system_prompt("deepseek_like");
  return g;
}

// Gold reward components into metrics; returns their sum.
double score_gold(const Gold& g, const buffer::Task& task, const Sample& s, buffer::Experience& e) {
  const RewardComponents c = g.fn(RewardInput{s.text, task.truth, static_cast<int64_t>(s.ids.size())});
  for (const auto& [k, v] : c) e.metrics[k] = v;
  const double sum = sum_components(c);
  e.metrics["gold_reward"] = sum;
  return sum;
}

std::vector<std::string> texts(const PolicyRollout& r) {
  std::vector<std::string> t;
  for (const auto& s : r.samples) t.push_back(s.text);
  return t;
}

class MathRulerWorkflow : public Workflow {
 public:
  explicit MathRulerWorkflow(const buffer::Task& task) : task_(task), gold_(gold_for(task)) {
    WorkflowArgs("math_ruler_workflow", task.workflow_args, {});
  }
  bool can_repeat() const override { return true; }

  std::vector<buffer::Experience> run(RunContext& ctx) override {
    ModelClient& judge = auxiliary_judge(ctx, "math_ruler_workflow");
    PolicyRollout r = single_turn_rollout(task_, gold_.system_prompt, ctx);
    const size_t g = r.exps.size();
    for (size_t i = 0; i < g; ++i) score_gold(gold_, task_, r.samples[i], r.exps[i]);
    JudgeRecord rec;
    rec.judge = "auxiliary_models[0]";
    rec.prompt = judge_messages(ruler_system_prompt(g), ruler_user_prompt(task_.task_desc, texts(r), false));
    rec.raw = judge_chat(judge, rec.prompt, GenOptions{});
    const ParsedScores p = parse_score_list(rec.raw, g);
    if (p.scores)
      rec.scores = *p.scores;
    else
      rec.error = p.reason + ": " + p.detail;
    for (size_t i = 0; i < g; ++i) {
      buffer::Experience& e = r.exps[i];
      e.reward = p.scores ? (*p.scores)[i] : 0.0;
      e.metrics["judge_success"] = p.scores ? 1.0 : 0.0;
      e.metrics["judge_score"] = *e.reward;
      JudgeRecord mine = rec;
      if (p.scores) mine.score = (*p.scores)[i];
      add_judge_record(e, mine);
    }
    return std::move(r.exps);
  }

 private:
  buffer::Task task_;
  Gold gold_;
};

class MathTrainableRulerWorkflow : public Workflow {
 public:
  explicit MathTrainableRulerWorkflow(const buffer::Task& task) : task_(task), gold_(gold_for(task)) {
    WorkflowArgs("math_trainable_ruler_workflow", task.workflow_args, {});
  }
  bool can_repeat() const override { return true; }

  std::vector<buffer::Experience> run(RunContext& ctx) override {
    TRINITY_ASSERT(ctx.model != nullptr, "math_trainable_ruler_workflow without a model");
    Rng fallback(static_cast<uint64_t>(ctx.task_id));
    Rng& rng = ctx.rng ? *ctx.rng : fallback;
    const bool gold_available = rng.uniform() < kRulerGroundTruthProbability;  // the first draw, by contract
    PolicyRollout r = single_turn_rollout(task_, gold_.system_prompt, ctx);
    const size_t g = r.exps.size();
    std::vector<double> gold(g), gold_scaled(g);
    for (size_t i = 0; i < g; ++i) {
      gold[i] = score_gold(gold_, task_, r.samples[i], r.exps[i]);
      gold_scaled[i] = (gold[i] + 0.1) / 1.2;  // [-0.1, 1.1] -> [0, 1]
    }

    // The policy judges its own candidates: G samples with ground truth, else one.
    const std::string prompt =
        judge_messages(ruler_system_prompt(g), ruler_user_prompt(task_.task_desc, texts(r), true));
    const int64_t n_judge = gold_available ? static_cast<int64_t>(g) : 1;
    const std::vector<Sample> js = ctx.model->chat(prompt, gen_options_for(task_, n_judge, &rng));
    std::vector<double> sum(g, 0.0), judge_reward(js.size(), 0.0);
    std::vector<ParsedScores> parsed(js.size());
    size_t ok = 0;
    for (size_t k = 0; k < js.size(); ++k) {
      parsed[k] = parse_score_list(js[k].text, g);
      if (!parsed[k].scores) continue;
      ++ok;
      double mae = 0;
      for (size_t i = 0; i < g; ++i) {
        sum[i] += (*parsed[k].scores)[i];
        mae += std::fabs((*parsed[k].scores)[i] - gold_scaled[i]);
      }
      if (gold_available) judge_reward[k] = 1.0 - mae / static_cast<double>(g);
    }
    const double success = js.empty() ? 0.0 : static_cast<double>(ok) / static_cast<double>(js.size());

    for (size_t i = 0; i < g; ++i) {
      buffer::Experience& e = r.exps[i];
      const double judged = ok ? sum[i] / static_cast<double>(ok) : 0.0;
      e.reward = gold_available ? gold[i] : judged;
      e.metrics["judge_success"] = success;
      e.metrics["judge_score"] = judged;
      e.metrics["gold_available"] = gold_available ? 1.0 : 0.0;
      for (size_t k = 0; k < js.size(); ++k) add_judge_record(e, record(prompt, js[k].text, parsed[k], i));
    }
    std::vector<buffer::Experience> out = std::move(r.exps);
    if (!gold_available) return out;
    for (size_t k = 0; k < js.size(); ++k) {
      buffer::Experience e = experience_from_sample(js[k], *ctx.model, ctx.run_id_base + static_cast<int64_t>(k));
      e.eid.batch = kRulerGroupTag;
      e.reward = judge_reward[k];
      e.metrics["judge_success"] = success;
      e.metrics["reward_for_judger"] = judge_reward[k];
      json m = json::parse(prompt);
      m.push_back({{"role", "assistant"}, {"content", js[k].text}});
      e.messages = m.dump();
      JudgeRecord rec = record(prompt, js[k].text, parsed[k], std::nullopt);
      rec.score = judge_reward[k];
      add_judge_record(e, rec);
      json info = json::parse(e.info);
      info["gold_scores_scaled"] = gold_scaled;
      e.info = info.dump();
      out.push_back(std::move(e));
    }
    return out;
  }

 private:
  // candidate: the policy experience whose score goes into "score" (nullopt: none).
  static JudgeRecord record(const std::string& prompt, const std::string& raw, const ParsedScores& p,
                            std::optional<size_t> candidate) {
    JudgeRecord rec;
    rec.judge = "policy";
    rec.prompt = prompt;
    rec.raw = raw;
    if (p.scores) {
      rec.scores = *p.scores;
      if (candidate) rec.score = (*p.scores)[*candidate];
    } else {
      rec.error = p.reason + ": " + p.detail;
    }
    return rec;
  }

  buffer::Task task_;
  Gold gold_;
};

}  // namespace

std::string ruler_system_prompt(size_t n) {
  return strcat("You are a fair judge. The user will provide a question and ", n,
                " candidate solutions to it. Your task is to compare the solutions, see how well they resolve the "
                "question, and assign a score within the range [0, 1] for each solution.");
}

std::string ruler_user_prompt(const std::string& task_desc, const std::vector<std::string>& candidates,
                              bool trainable) {
  const std::string question =
      "Question: " + task_desc +
      "\n\nSolution format requirement: first thinks about the reasoning process in the mind and then provides the "
      "final answer. The reasoning process and answer are enclosed within <think> </think> and <answer> </answer> "
      "tags, respectively, i.e.,\n<think> reasoning process here </think>\n<answer> answer here </answer>.";
  std::string solutions;
  for (size_t i = 0; i < candidates.size(); ++i)
    solutions += strcat(i ? "\n\n" : "", "Candidate solution ", i + 1, ": ", candidates[i]);
  const char* sep = trainable ? "\n" : "\n\n";
  return strcat("\nBelow is a question and several candidate solutions.", sep, question, sep, solutions, sep,
                "Please assign a score within the range [0, 1] for each of them, reflecting how well they solve the "
                "question.\nYou may compare them against each other and think step by step before returning your "
                "final scores, but keep your reasoning process brief and concise when possible.",
                sep,
                "Conclude your response with a list of scores, in the following format: [score for solution 1, "
                "score for solution 2, ..., score for solution ",
                candidates.size(), "]\n");
}

void detail::register_ruler_workflows() {
  add_builtin("math_ruler_workflow", [](const buffer::Task& t) -> std::unique_ptr<Workflow> {
    return std::make_unique<MathRulerWorkflow>(t);
  });
  add_builtin("math_trainable_ruler_workflow", [](const buffer::Task& t) -> std::unique_ptr<Workflow> {
    return std::make_unique<MathTrainableRulerWorkflow>(t);
  });
}

}  // namespace trinity::workflow
