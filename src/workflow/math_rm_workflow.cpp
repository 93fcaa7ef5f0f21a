// math_rm_workflow: math with a reward model (upstream math_rm_workflow.py). Upstream scores each
// response with an RM-Gallery reward (reward_fn rm_gallery_reward, reward_fn_args {reward_name, ...})
// called with (response, messages, ground_truth). RM-Gallery is a Python library, so natively the
// reward model is explorer.auxiliary_models[0] used as a *generative* reward model: it sees the
// question, the reference answer (task.truth, when present) and the response, and answers
// ```json {"rating": 1..10}``` at temperature 0; reward = rating * 0.1, metrics judge_score and
// judge_success; every call is logged in info["judge"]. reward_fn must be empty or
// rm_gallery_reward (its reward_fn_args are not used; they are recorded in info["judge_note"]); an
// unparsable rating fails the run ("[judge] unparsable: ...") unless workflow_args.judge_failure =
// "zero". The policy's system prompt is task.system_prompt (upstream: format.system_prompt).
#include <nlohmann/json.hpp>

#include "workflow/builtins.h"
#include "workflow/judge.h"
#include "workflow/math_rm.h"
#include "workflow/simple_workflow.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;

class MathRmWorkflow : public Workflow {
 public:
  explicit MathRmWorkflow(const buffer::Task& task) : task_(task) {
    const std::string name = "math_rm_workflow";
    if (!task.reward_fn.empty() && task.reward_fn != "rm_gallery_reward")
      throw ConfigError("workflow", strcat(name,
                                           " scores with a reward model (explorer.auxiliary_models[0]); "
                                           "reward_fn '",
                                           task.reward_fn,
                                           "' would not be used: leave it "
                                           "unset (or rm_gallery_reward), or use math_workflow for rule-based "
                                           "rewards"));
    WorkflowArgs wa(name, task.workflow_args, {"judge_failure"});
    const std::string v = wa.get_json("judge_failure");
    const json j = v.empty() ? json("fail") : json::parse(v);
    if (!j.is_string())
      throw ConfigError("workflow", strcat(name, ": workflow_args.judge_failure must be a string, got ", v));
    fail_ = judge_failure_fails(name, j.get<std::string>());
    if (task.reward_fn == "rm_gallery_reward")
      note_ = strcat("RM-Gallery is not available natively; reward_fn_args ", task.reward_fn_args,
                     " unused; scored by auxiliary_models[0] as a generative reward model");
  }
  bool can_repeat() const override { return true; }

  std::vector<buffer::Experience> run(RunContext& ctx) override {
    ModelClient& judge = auxiliary_judge(ctx, "math_rm_workflow");
    PolicyRollout r = single_turn_rollout(task_, task_.system_prompt, ctx);
    const size_t n = r.exps.size();
    std::vector<JudgeRecord> rec(n);
    std::vector<ParsedRating> parsed(n);
    for_each_parallel(n, [&](size_t i) {
      rec[i].judge = "auxiliary_models[0]";
      rec[i].prompt =
          judge_messages(math_rm_system_prompt(), math_rm_user_prompt(task_.task_desc, task_.truth, r.samples[i].text));
      GenOptions o;
      o.temperature = 0.0;
      rec[i].raw = judge_chat(judge, rec[i].prompt, o);
      parsed[i] = parse_rating(rec[i].raw, 1, 10);
    });
    size_t ok = 0;
    for (size_t i = 0; i < n; ++i) {
      if (parsed[i].rating) {
        ++ok;
        rec[i].score = *parsed[i].rating * 0.1;
        continue;
      }
      rec[i].error = parsed[i].reason + ": " + parsed[i].detail;
      if (fail_)
        throw JudgeError(parsed[i].reason, strcat("math_rm_workflow run ", r.exps[i].eid.run, ": ", parsed[i].detail));
    }
    const double success = n ? static_cast<double>(ok) / static_cast<double>(n) : 0.0;
    for (size_t i = 0; i < n; ++i) {
      buffer::Experience& e = r.exps[i];
      e.reward = rec[i].score.value_or(0.0);
      e.metrics["judge_score"] = *e.reward;
      e.metrics["judge_success"] = success;
      add_judge_record(e, rec[i]);
      if (!note_.empty()) {
        json info = json::parse(e.info);
        info["judge_note"] = note_;
        e.info = info.dump();
      }
    }
    return std::move(r.exps);
  }

 private:
  buffer::Task task_;
  bool fail_ = true;
  std::string note_;
};

}  // namespace

const std::string& math_rm_system_prompt() {
  static const std::string s =
      "You are a reward model for math problems. Given a question, a candidate solution and, when available, the "
      "reference answer, judge whether the solution reaches the correct final answer with sound reasoning, and rate "
      "it on a scale of 1 to 10 (10: correct final answer and sound reasoning; 1: wrong or missing final answer).\n"
      "Start your response with a valid JSON object that starts with \"```json\" and ends with \"```\". The JSON "
      "object should contain a single key \"rating\" and the value should be an integer between 1 and 10.\n"
      "Example response:\n```json\n{\n\"rating\": 7\n}```";
  return s;
}

std::string math_rm_user_prompt(const std::string& question, const std::string& reference,
                                const std::string& response) {
  std::string s = "<question>\n" + question + "\n</question>\n";
  if (!reference.empty()) s += "<reference_answer>\n" + reference + "\n</reference_answer>\n";
  s += "<solution>\n" + response + "\n</solution>\nYour JSON Evaluation:";
  return s;
}

void detail::register_math_rm_workflow() {
  add_builtin("math_rm_workflow",
              [](const buffer::Task& t) -> std::unique_ptr<Workflow> { return std::make_unique<MathRmWorkflow>(t); });
}

}  // namespace trinity::workflow
