// env_workflow: an agent plays one episode against an environment server per run (issue 13;
// docs/environments.md). The environment is reached through env::Session (OpenEnv over /ws or HTTP,
// or an AgentGym server); the workflow never sees the transport.
//   messages: [system_prompt, user = observation_template(reset observation)], then per turn the
//   model's answer, the action it encodes (text: the (pattern-extracted) text into action_field;
//   tool_call: the arguments of the model's tool call), and the next observation as a user message
//   (tool_call: a tool message).
// Experience layouts (workflow arg step_wise):
//   false (default): ONE experience per run, token-in/token-out as frozen_lake_workflow: the prompt
//     ids, then each turn's sampled ids (action_mask 1, rollout logprobs) and the template glue plus
//     next observation (mask 0, logprob 0); rollout max_tokens budgets the whole response part.
//   true: one experience per turn (eid.step = turn): that turn's prompt ids + its sampled ids;
//     info.anchor = the observation text the action was taken in (GiGPO's anchor state); reward =
//     the episode reward on every step (step_reward: episode, Trinity's reward propagation for
//     step_wise_grpo) or that step's env reward (step_reward: env, for gigpo).
// Episode reward (reward: last | sum | discounted, gamma): of the env rewards (null = 0). An episode
// cut by the token budget is response_truncated with reward 0 (Trinity's multi-turn rule); one that
// hits max_steps keeps its reward (env_done = 0 in metrics).
// Failures: env errors become "[env] <reason>: ..." (reason: connect | timeout | closed | protocol |
// server), which the explorer counts as rollout/failed/env_<reason> and the runner retries; the
// session is closed on every exit path.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "env/session.h"
#include "workflow/workflow.h"

namespace trinity::workflow {

// Opens a session; tests substitute scripted environments.
using SessionOpener = std::function<std::unique_ptr<env::Session>(const env::SessionOptions&)>;

// Defaults a named preset sets before the task's workflow_args apply (alfworld_workflow, ...).
struct EnvPreset {
  std::string name = "env_workflow";
  std::string workflow_args = "{}";  // JSON object of defaults
  // Reward of the finished episode from (env rewards, done); empty = the `reward` arg's rule.
  std::function<double(const std::vector<double>& rewards, bool done)> episode_reward;
  std::string url_env_var;  // environment variable holding env_url when workflow_args has none
  // The user message for an observation text (after observation_template); empty = as is.
  std::function<std::string(const std::string& text)> format_observation;
  // The reset field that selects the task (AgentGym: "game", "data_idx", "session_id"): taken from
  // the task row's field of that name, else from a numeric task_desc; "" = none.
  std::string task_reset_key;
};

std::unique_ptr<Workflow> make_env_workflow(const buffer::Task& task, const EnvPreset& preset = {},
                                            SessionOpener opener = {});

}  // namespace trinity::workflow
