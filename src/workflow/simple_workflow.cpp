// Single-turn workflows: SimpleWorkflow and its math / math_boxed / countdown presets, plus the
// experience-building helpers shared with the other workflows.
#include "workflow/simple_workflow.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_limits.h"
#include "tokenizer/tokenizer.h"
#include "workflow/builtins.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;

const std::map<std::string, std::string>& math_prompts() {
  static const std::map<std::string, std::string> m = {
      {"deepseek_like",
       "A conversation between User and Assistant. The user asks a question, and the Assistant solves it. The "
       "assistant first thinks about the reasoning process in the mind and then provides the user with the answer. "
       "The reasoning process and answer are enclosed within <think> </think> and <answer> </answer> tags, "
       "respectively, i.e.,\n<think> reasoning process here </think>\n<answer> answer here </answer>."},
      {"boxed_with_think",
       "You are a helpful assistant that solves MATH problems. You should first think about the reasoning process "
       "in mind and then provide the user with the answer. You should present your reasoning process using the "
       "format: <think>\n ...your reasoning process here... </think>\n first. You should always include your final "
       "answer in \\boxed{} as closed-form results."},
      {"boxed_no_think", "Please reason step by step, and put your final answer within \\boxed{}."},
  };
  return m;
}

// Trinity's math_workflow: the system prompt may name a predefined prompt; a prompt asking for
// \boxed{} switches the reward to math_boxed_reward (with_think when it mentions the think tags).
std::unique_ptr<Workflow> make_math_workflow(const buffer::Task& task) {
  std::string sp = task.system_prompt.empty() ? "deepseek_like" : task.system_prompt;
  if (math_prompts().count(sp)) sp = math_prompts().at(sp);
  std::string reward = "math_reward", args = "{}";
  if (sp.find("boxed{") != std::string::npos) {
    reward = "math_boxed_reward";
    const bool think = sp.find("<think>") != std::string::npos && sp.find("</think>") != std::string::npos;
    args = json{{"with_think", think}}.dump();
  }
  if (!task.reward_fn.empty()) reward = "", args = task.reward_fn_args;  // an explicit reward_fn wins
  return std::make_unique<SimpleWorkflow>(task, "math_workflow", reward, args, sp);
}

std::unique_ptr<Workflow> make_math_boxed_workflow(const buffer::Task& task) {
  WorkflowArgs wa("math_boxed_workflow", task.workflow_args, {"with_think", "use_base", "format_score_coef"});
  const bool with_think = wa.get_bool("with_think", false);
  const bool use_base = wa.get_bool("use_base", false);
  const double coef = wa.get_double("format_score_coef", 0.1);
  std::string sp = task.system_prompt.empty() ? (with_think ? "boxed_with_think" : "boxed_no_think") : task.system_prompt;
  if (math_prompts().count(sp)) sp = math_prompts().at(sp);
  std::string reward = "math_boxed_reward";
  std::string args = json{{"with_think", with_think}, {"format_score_coef", coef}}.dump();
  if (!task.reward_fn.empty()) reward = "", args = task.reward_fn_args;
  return std::make_unique<SimpleWorkflow>(task, "math_boxed_workflow", reward, args, sp, use_base);
}

std::string messages_json(const std::string& system_prompt, const buffer::Task& task) {
  if (!task.messages.empty()) return task.messages;  // messages_key rows carry their own conversation
  json m = json::array();
  if (!system_prompt.empty()) m.push_back({{"role", "system"}, {"content", system_prompt}});
  m.push_back({{"role", "user"}, {"content", task.task_desc}});
  return m.dump();
}

}  // namespace

const std::string& math_system_prompt(const std::string& key) {
  auto it = math_prompts().find(key);
  if (it == math_prompts().end()) throw ConfigError("workflow", strcat("unknown math system prompt '", key, "'"));
  return it->second;
}

WorkflowArgs::WorkflowArgs(const std::string& wf, const std::string& json_text, const std::vector<std::string>& allowed)
    : workflow(wf) {
  json j;
  check_json_depth(json_text, strcat(wf, ": workflow_args"), kMaxJsonDepth, "workflow");
  try {
    j = json_text.empty() ? json::object() : json::parse(json_text);
  } catch (const json::exception& e) {
    throw ConfigError("workflow", strcat(wf, ": workflow_args is not valid JSON: ", e.what()));
  }
  if (j.is_null()) j = json::object();
  if (!j.is_object()) throw ConfigError("workflow", strcat(wf, ": workflow_args must be a JSON object"));
  for (const auto& [k, v] : j.items()) {
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw ConfigError("workflow", strcat(wf, ": unknown workflow_args key '", k, "'; accepted: ",
                                           list.empty() ? "(none)" : list));
    }
  }
  text = j.dump();
}

namespace {
template <typename T>
T wa_get(const WorkflowArgs& wa, const std::string& key, T def) {
  const json j = json::parse(wa.text);
  if (!j.contains(key) || j[key].is_null()) return def;
  try {
    return j[key].get<T>();
  } catch (const json::exception&) {
    throw ConfigError("workflow", strcat(wa.workflow, ": workflow_args.", key, " has the wrong type: ", j[key].dump()));
  }
}
}  // namespace

bool WorkflowArgs::get_bool(const std::string& key, bool def) const { return wa_get<bool>(*this, key, def); }
double WorkflowArgs::get_double(const std::string& key, double def) const { return wa_get<double>(*this, key, def); }
int64_t WorkflowArgs::get_int(const std::string& key, int64_t def) const { return wa_get<int64_t>(*this, key, def); }
std::string WorkflowArgs::get_json(const std::string& key) const {
  const json j = json::parse(text);
  return j.contains(key) && !j[key].is_null() ? j[key].dump() : "";
}

GenOptions gen_options_for(const buffer::Task& task, int64_t n, Rng* rng) {
  GenOptions o;
  const auto& ra = task.rollout_args;
  o.temperature = ra.temperature;
  o.top_p = ra.top_p;
  o.top_k = ra.top_k;
  o.max_tokens = ra.max_tokens;
  o.n = n;
  if (rng) o.seed = rng->next_u64();
  return o;
}

buffer::Experience experience_from_sample(const Sample& s, const ModelClient& model, int64_t run) {
  TRINITY_ASSERT(s.logprobs.size() == s.ids.size(), "sample logprobs ", s.logprobs.size(), " != ids ", s.ids.size());
  buffer::Experience e;
  e.eid.run = run;
  e.tokens = s.prompt_ids;
  e.tokens.insert(e.tokens.end(), s.ids.begin(), s.ids.end());
  e.prompt_length = static_cast<int64_t>(s.prompt_ids.size());
  e.logprobs = s.logprobs;
  e.action_mask.assign(s.ids.size(), 1);
  e.model_version = s.model_version;
  if (s.finish_reason == "length") e.truncate_status = buffer::TruncateStatus::kResponseTruncated;
  if (s.finish_reason == "prompt_truncated") {  // an overlong prompt's dummy: nothing to learn from
    e.truncate_status = buffer::TruncateStatus::kPromptTruncated;
    e.action_mask.assign(s.ids.size(), 0);
  }
  e.prompt_text = model.tokenizer().decode(s.prompt_ids);
  e.response_text = s.text;
  e.info = json{{"finish_reason", s.finish_reason}}.dump();
  for (const auto& [k, v] : s.metrics) e.metrics[k] = v;
  return e;
}

SimpleWorkflow::SimpleWorkflow(const buffer::Task& task, const std::string& workflow_name,
                               const std::string& default_reward_fn, const std::string& reward_args,
                               std::string system_prompt, bool plain_text_prompt)
    : task_(task), system_prompt_(std::move(system_prompt)), plain_text_(plain_text_prompt) {
  std::string name = default_reward_fn, args = reward_args;
  if (name.empty()) name = task.reward_fn, args = task.reward_fn_args;
  if (name.empty())
    throw ConfigError("workflow", strcat(workflow_name, " needs a reward_fn (e.g. math_reward, countdown_reward); "
                                         "set buffer.explorer_input.taskset.default_reward_fn_type"));
  reward_ = make_reward_fn(name, args);
}

std::vector<buffer::Experience> SimpleWorkflow::run(RunContext& ctx) {
  TRINITY_ASSERT(ctx.model != nullptr, "SimpleWorkflow::run without a model");
  ModelClient& model = *ctx.model;
  const GenOptions opt = gen_options_for(task_, std::max<int64_t>(1, ctx.repeat_times), ctx.rng);
  std::vector<Sample> samples;
  std::string msgs;
  if (plain_text_) {
    std::string prompt = system_prompt_.empty() ? "" : "System:" + system_prompt_ + "\n";
    prompt += "User:\n" + task_.task_desc + "\nAssistant:\n" + task_.reply_prefix;
    samples = model.generate(prompt, opt);
  } else {
    msgs = messages_json(system_prompt_, task_);
    if (task_.reply_prefix.empty()) {
      samples = model.chat(msgs, opt, task_.tools);
    } else {
      // Continue the assistant turn: template text with the generation prompt, then the prefix.
      const std::string text =
          model.render_chat_template(msgs, true, task_.tools, opt.enable_thinking) + task_.reply_prefix;
      samples = model.generate(text, opt);
    }
  }
  std::vector<buffer::Experience> out;
  out.reserve(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    const Sample& s = samples[i];
    buffer::Experience e = experience_from_sample(s, model, ctx.run_id_base + static_cast<int64_t>(i));
    const RewardComponents c =
        reward_(RewardInput{s.text, task_.truth, static_cast<int64_t>(s.ids.size())});
    e.reward = sum_components(c);
    for (const auto& [k, v] : c) e.metrics[k] = v;
    if (!msgs.empty()) {
      json m = json::parse(msgs);
      m.push_back({{"role", "assistant"}, {"content", task_.reply_prefix + s.text}});
      e.messages = m.dump();
    }
    if (!task_.tools.empty()) e.tools = task_.tools;
    out.push_back(std::move(e));
  }
  return out;
}

void detail::register_simple_workflows() {
  add_builtin("simple_workflow", [](const buffer::Task& t) -> std::unique_ptr<Workflow> {
    return std::make_unique<SimpleWorkflow>(t, "simple_workflow", "", "", t.system_prompt);
  });
  add_builtin("math_workflow", make_math_workflow);
  add_builtin("math_boxed_workflow", make_math_boxed_workflow);
  add_builtin("countdown_workflow", [](const buffer::Task& t) -> std::unique_ptr<Workflow> {
    if (!t.reward_fn.empty())
      return std::make_unique<SimpleWorkflow>(t, "countdown_workflow", "", "", t.system_prompt);
    return std::make_unique<SimpleWorkflow>(t, "countdown_workflow", "countdown_reward", t.reward_fn_args,
                                            t.system_prompt);
  });
}

}  // namespace trinity::workflow
