// Reward functions (trinity-rft.md §5.5): a registry of name -> RewardFn. A RewardFn maps one
// response to named reward components; workflows sum them into Experience::reward and log each
// as a metric. Built-ins: math_reward, math_boxed_reward, format_reward, accuracy_reward,
// countdown_reward, math_dapo_reward. Arguments (reward_fn_args / workflow_args) travel as JSON
// object text and are validated when the function is made, so a bad key fails before any rollout.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace trinity::workflow {

struct RewardInput {
  std::string_view response;    // decoded response text (special tokens skipped)
  std::string_view truth;       // task.truth (gold answer; JSON text for countdown)
  int64_t response_tokens = 0;  // sampled token count (overlong penalty)
};

using RewardComponents = std::map<std::string, double>;
using RewardFn = std::function<RewardComponents(const RewardInput&)>;
// Builds a RewardFn from its args (JSON object text, "" = {}); ConfigError on bad args.
using RewardFactory = std::function<RewardFn(const std::string& args_json)>;

void register_reward_fn(const std::string& name, RewardFactory factory);
// ConfigError "[reward] unknown reward_fn 'x' (did you mean 'y'?); registered: ..." when absent.
RewardFn make_reward_fn(const std::string& name, const std::string& args_json = "{}");
bool has_reward_fn(const std::string& name);
std::vector<std::string> reward_fn_names();

double sum_components(const RewardComponents& c);

// Pattern checks used by the math rewards (exact semantics of Trinity's regexes, matched by hand
// so long responses cannot blow the regex engine's stack).
// re.match(r".*?<think>.*?</think>\s*<answer>.*?</answer>\s*$", s, re.DOTALL)
bool matches_think_answer_format(std::string_view s);
// re.match(r"^<think>\n.*?\n</think>\n<answer>\n.*?\n</answer>$", s, re.DOTALL)
bool matches_strict_think_answer_format(std::string_view s);
// Exactly one <think> and one </think>, in that order.
bool valid_think_pattern(std::string_view s);

}  // namespace trinity::workflow
