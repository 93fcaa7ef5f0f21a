// rubric_judge_workflow / rubric_judge_openai_workflow (upstream rubric_judge_workflow.py; RaR-implicit,
// arXiv 2507.17746): the policy answers (n = repeat_times, one chat request); a judge rates each
// response against the row's "rubric" ([{weight, description}, ...]) on 1..10 with upstream's prompts,
// at temperature 0; reward = rating * 0.1, metrics judge_score (= reward) and judge_success (the
// group's parsed fraction). The judge is explorer.auxiliary_models[0], or for the openai variant any
// OpenAI-compatible endpoint (workflow_args judge_model_name, judge_api_base_url_env =
// OPENAI_BASE_URL, judge_api_key_env = OPENAI_API_KEY; openai_judge.h). Every call is logged in
// info["judge"]. An unparsable rating fails the run ("[judge] unparsable: ...", counted as
// rollout/failed/judge_unparsable) unless workflow_args.judge_failure = "zero" (upstream: reward 0).
#include <nlohmann/json.hpp>

#include "workflow/builtins.h"
#include "workflow/judge.h"
#include "workflow/openai_judge.h"
#include "workflow/rubric_judge.h"
#include "workflow/simple_workflow.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;

// Upstream's default policy system prompt (its trailing newline and indent included).
constexpr const char* kPolicySystemPrompt =
    "A conversation between User and Assistant. The user asks a question, and the Assistant solves it. The "
    "assistant first thinks about the reasoning process in the mind and then provides the user with the answer.\n"
    "    ";

// Python's str() of a JSON value in an f-string: strings bare, numbers as written.
std::string py_str(const json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

using JudgeCall = std::function<std::string(RunContext& ctx, const std::string& messages)>;

class RubricJudgeWorkflow : public Workflow {
 public:
  RubricJudgeWorkflow(const buffer::Task& task, std::string name, std::string judge_label, JudgeCall judge,
                      bool fail_unparsable)
      : task_(task),
        name_(std::move(name)),
        label_(std::move(judge_label)),
        judge_(std::move(judge)),
        fail_(fail_unparsable),
        rubric_(rubric_list_text(task.raw, name_)),
        system_prompt_(task.system_prompt.empty() ? kPolicySystemPrompt : task.system_prompt) {}

  bool can_repeat() const override { return true; }

  std::vector<buffer::Experience> run(RunContext& ctx) override {
    PolicyRollout r = single_turn_rollout(task_, system_prompt_, ctx);
    const size_t n = r.exps.size();
    std::vector<JudgeRecord> rec(n);
    std::vector<ParsedRating> parsed(n);
    for_each_parallel(n, [&](size_t i) {
      rec[i].judge = label_;
      rec[i].prompt = judge_messages(rubric_judge_system_prompt(),
                                     rubric_judge_user_prompt(task_.task_desc, r.samples[i].text, rubric_));
      rec[i].raw = judge_(ctx, rec[i].prompt);
      parsed[i] = parse_rating(rec[i].raw, 1, 10);
    });
    size_t ok = 0;
    for (size_t i = 0; i < n; ++i) {
      if (parsed[i].rating) {
        ++ok;
        rec[i].score = *parsed[i].rating * 0.1;
      } else {
        rec[i].error = parsed[i].reason + ": " + parsed[i].detail;
        if (fail_)
          throw JudgeError(parsed[i].reason, strcat(name_, " run ", r.exps[i].eid.run, ": ", parsed[i].detail));
      }
    }
    const double success = n ? static_cast<double>(ok) / static_cast<double>(n) : 0.0;
    for (size_t i = 0; i < n; ++i) {
      buffer::Experience& e = r.exps[i];
      e.reward = rec[i].score.value_or(0.0);
      e.metrics["judge_score"] = *e.reward;
      e.metrics["judge_success"] = success;
      add_judge_record(e, rec[i]);
    }
    return std::move(r.exps);
  }

 private:
  buffer::Task task_;
  std::string name_, label_;
  JudgeCall judge_;
  bool fail_;
  std::string rubric_, system_prompt_;
};

std::string judge_failure_arg(const WorkflowArgs& wa) {
  const std::string v = wa.get_json("judge_failure");
  if (v.empty()) return "fail";
  const json j = json::parse(v);
  if (!j.is_string())
    throw ConfigError("workflow", strcat(wa.workflow, ": workflow_args.judge_failure must be a string, got ", v));
  return j.get<std::string>();
}

std::unique_ptr<Workflow> make_rubric_judge(const buffer::Task& task) {
  const std::string name = "rubric_judge_workflow";
  WorkflowArgs wa(name, task.workflow_args, {"judge_failure"});
  const bool fail = judge_failure_fails(name, judge_failure_arg(wa));
  JudgeCall call = [name](RunContext& ctx, const std::string& messages) {
    GenOptions o;
    o.temperature = 0.0;
    return judge_chat(auxiliary_judge(ctx, name), messages, o);
  };
  return std::make_unique<RubricJudgeWorkflow>(task, name, "auxiliary_models[0]", std::move(call), fail);
}

std::unique_ptr<Workflow> make_rubric_judge_openai(const buffer::Task& task) {
  const std::string name = "rubric_judge_openai_workflow";
  WorkflowArgs wa(
      name, task.workflow_args,
      {"judge_model_name", "judge_api_base_url_env", "judge_api_key_env", "judge_timeout", "judge_failure"});
  const bool fail = judge_failure_fails(name, judge_failure_arg(wa));
  auto str = [&](const std::string& key, const std::string& def) {
    const std::string v = wa.get_json(key);
    if (v.empty()) return def;
    const json j = json::parse(v);
    if (!j.is_string())
      throw ConfigError("workflow", strcat(name, ": workflow_args.", key, " must be a string, got ", v));
    return j.get<std::string>();
  };
  OpenAIJudge judge =
      OpenAIJudge::from_env(name, str("judge_model_name", ""), str("judge_api_base_url_env", "OPENAI_BASE_URL"),
                            str("judge_api_key_env", "OPENAI_API_KEY"), wa.get_double("judge_timeout", 600));
  const std::string label = "openai:" + judge.model;
  JudgeCall call = [judge](RunContext&, const std::string& messages) { return judge.chat(messages, 0.0); };
  return std::make_unique<RubricJudgeWorkflow>(task, name, label, std::move(call), fail);
}

}  // namespace

const std::string& rubric_judge_system_prompt() {
  static const std::string s =
      "You are an expert evaluator. Given a user prompt, a generated response, and a list of quality rubrics, please "
      "rate the overall quality of the response on a scale of 1 to 10 based on how well it satisfies the rubrics.\n"
      "Consider all rubrics holistically when determining your score. A response that violates multiple rubrics "
      "should receive a lower score, while a response that satisfies all rubrics should receive a higher score.\n"
      "Start your response with a valid JSON object that starts with \"```json\" and ends with \"```\". The JSON "
      "object should contain\na single key \"rating\" and the value should be an integer between 1 and 10.\n"
      "Example response:\n```json\n{\n\"rating\": 7\n}```";
  return s;
}

std::string rubric_judge_user_prompt(const std::string& task_desc, const std::string& response,
                                     const std::string& rubric_list) {
  return strcat(
      "Given the following prompt, response, and rubrics, please rate the overall quality of the response on a "
      "scale of 1 to 10 based\non how well it satisfies the rubrics.\n<prompt>\n",
      task_desc, "\n</prompt>\n<response>\n", response, "\n</response>\n<rubrics>\n", rubric_list,
      "\n</rubrics>\nYour JSON Evaluation:");
}

std::string rubric_list_text(const std::string& raw_row, const std::string& workflow) {
  const json row = json::parse(raw_row.empty() ? "{}" : raw_row, nullptr, false);
  json rubric = row.is_object() && row.contains("rubric") ? row["rubric"] : json::array();
  if (rubric.is_string()) {  // a column holding the list as JSON text
    rubric = json::parse(rubric.get<std::string>(), nullptr, false);
    if (rubric.is_discarded())
      throw ConfigError("workflow", strcat(workflow, ": the task row's 'rubric' is a string but not a JSON list"));
  }
  if (rubric.is_null()) rubric = json::array();
  if (!rubric.is_array())
    throw ConfigError("workflow", strcat(workflow,
                                         ": the task row's 'rubric' must be a list of "
                                         "{\"weight\", \"description\"}, got ",
                                         rubric.dump().substr(0, 80)));
  if (rubric.empty()) return "Rubrics are not provided.";
  std::string out;
  for (size_t i = 0; i < rubric.size(); ++i) {
    const json& r = rubric[i];
    if (!r.is_object() || !r.contains("weight") || !r.contains("description"))
      throw ConfigError("workflow", strcat(workflow, ": the task row's rubric[", i,
                                           "] needs 'weight' and 'description', got ", r.dump().substr(0, 80)));
    out += strcat(i ? "\n" : "", "Rubric ", i, " (weight: ", py_str(r["weight"]), "): ", py_str(r["description"]));
  }
  return out;
}

void detail::register_rubric_judge_workflows() {
  add_builtin("rubric_judge_workflow", make_rubric_judge);
  add_builtin("rubric_judge_openai_workflow", make_rubric_judge_openai);
}

}  // namespace trinity::workflow
