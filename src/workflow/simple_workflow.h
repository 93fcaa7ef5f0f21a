// Single-turn workflows (trinity-rft.md §5.1, §5.4): simple_workflow, math_workflow,
// math_boxed_workflow, countdown_workflow. One chat request with n = repeat_times (can_repeat);
// messages = [system?, user = task_desc, assistant = reply_prefix?] (a reply prefix is appended to
// the rendered template text and sent as a plain-text prompt). Each sample becomes one experience:
// tokens = prompt ids + sampled ids (exact, never re-tokenized), action_mask all 1, rollout
// logprobs, reward = sum of the reward components, which also go into metrics.
#pragma once

#include <string>
#include <vector>

#include "workflow/model_client.h"
#include "workflow/rewards/reward_fn.h"
#include "workflow/workflow.h"

namespace trinity::workflow {

// Sampling options from task.rollout_args (temperature, top_p, top_k, max_tokens) with n samples;
// the seed comes from ctx.rng when present so a retried attempt samples reproducibly.
GenOptions gen_options_for(const buffer::Task& task, int64_t n, Rng* rng);

// One experience from one sample: tokens/prompt_length/logprobs/action_mask(1)/model_version,
// eid.run = run, truncate_status response_truncated when finish_reason == "length",
// prompt_text (decoded prompt ids), response_text, info {"finish_reason"}, metrics = the sample's.
buffer::Experience experience_from_sample(const Sample& s, const ModelClient& model, int64_t run);

// Reads a workflow_args object (JSON text); ConfigError for malformed JSON or keys not in `allowed`.
// Returns the canonical JSON text (for passing on) — values are read with the helpers below.
struct WorkflowArgs {
  WorkflowArgs(const std::string& workflow, const std::string& json_text, const std::vector<std::string>& allowed);
  bool get_bool(const std::string& key, bool def) const;
  double get_double(const std::string& key, double def) const;
  int64_t get_int(const std::string& key, int64_t def) const;
  std::string get_json(const std::string& key) const;  // "" if absent
  std::string workflow;
  std::string text;  // canonical JSON object
};

class SimpleWorkflow : public Workflow {
 public:
  // reward_fn / reward_args: the reward to use ("" = task.reward_fn, which must then be set).
  SimpleWorkflow(const buffer::Task& task, const std::string& workflow_name, const std::string& default_reward_fn,
                 const std::string& reward_args, std::string system_prompt, bool plain_text_prompt = false);
  bool can_repeat() const override { return true; }
  std::vector<buffer::Experience> run(RunContext& ctx) override;

 private:
  buffer::Task task_;  // a copy: the workflow may outlive the caller's task
  RewardFn reward_;
  std::string system_prompt_;
  bool plain_text_;  // base-model prompt "System:...\nUser:\n...\nAssistant:\n" (math_boxed use_base)
};

// The predefined math system prompts of Trinity (deepseek_like, boxed_with_think, boxed_no_think).
const std::string& math_system_prompt(const std::string& key);

}  // namespace trinity::workflow
