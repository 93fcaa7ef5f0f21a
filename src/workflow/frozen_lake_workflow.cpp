// frozen_lake_workflow (trinity-rft.md §5.4): a concatenated multi-turn episode on FrozenLake, one
// experience per run built from exact ids. Layout of experience.tokens:
//   [apply_chat_template([system, user_0], gen) ids]                      prompt
//   [sampled ids of turn 0]                                               mask 1, rollout logprobs
//   [glue: end-of-turn rest + user_1 observation + generation prompt]     mask 0, logprob 0
//   [sampled ids of turn 1] ...
// The glue comes from turn_glue_ids (workflow/turn_glue.h), so no sampled text is ever
// re-tokenized. rollout max_tokens is the budget
// of the whole response part (sampled + glue); running out ends the episode as response_truncated.
#include <cctype>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_limits.h"
#include "core/text.h"
#include "tokenizer/tokenizer.h"
#include "workflow/builtins.h"
#include "workflow/envs/frozen_lake.h"
#include "workflow/simple_workflow.h"
#include "workflow/turn_glue.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;

const char* kSystemPrompt =
    "You are walking on a frozen lake.\n\n"
    "FrozenLake Quick Guide\n"
    "Goal: Reach the goal (G). Player (P) and Goal (G) must overlap.\n\n"
    "Symbols:\n_ Frozen | O Hole | G Goal | P Player\n\n"
    "Rules:\n1. Avoid falling into holes (O).\n"
    "2. Frozen tiles are slippery, you may move perpendicular to your intended direction.\n\n"
    "Valid Action (separated by | ):\nUp | Down | Left | Right\n\n"
    "Rewards:\nFall into hole: 0\nReach goal: +1.0\n\n"
    "You will be provided the current observation, please decide on the next Action.\n"
    "You should show your thought process and then input the final action in ``` ```.\n"
    "You should only output the NEXT ACTION at each interation in the ``` ```. For example, if you want to move "
    "up, you should output ```Up```.\n"
    "You should plan ahead and need to achieve it in minimum number of steps.\n"
    "You should be aware that frozen tiles can be slippery, but the chance is small and you should not overthink "
    "it.\n\n"
    "Please show your thinking process and put the final action in ``` ```. In every turn, the final action MUST "
    "be one of Up, Down, Left, Right.\n";

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

class FrozenLakeWorkflow : public Workflow {
 public:
  explicit FrozenLakeWorkflow(const buffer::Task& task) : task_(task) {
    WorkflowArgs wa("frozen_lake_workflow", task.workflow_args,
                    {"env_max_steps", "agent_max_steps", "is_slippery", "desc", "max_steps"});
    env_max_steps_ = wa.get_int("env_max_steps", wa.get_int("max_steps", 8));
    agent_max_steps_ = wa.get_int("agent_max_steps", 10);
    slippery_ = wa.get_bool("is_slippery", false);
    if (env_max_steps_ < 1 || agent_max_steps_ < 1)
      throw ConfigError("workflow", strcat("frozen_lake_workflow: env_max_steps and agent_max_steps must be >= 1, got ",
                                           env_max_steps_, " and ", agent_max_steps_));
    const std::string desc = wa.get_json("desc");
    json raw;
    try {
      raw = json::parse(task.raw.empty() ? "{}" : task.raw);
    } catch (const json::exception& e) {
      throw ValueError("workflow", strcat("frozen_lake_workflow: task row is not JSON: ", e.what()));
    }
    auto num = [&](const char* key, double def) {
      if (!raw.is_object() || !raw.contains(key) || raw[key].is_null()) return def;
      if (!raw[key].is_number())
        throw ValueError("workflow", strcat("frozen_lake_workflow: task row key '", key, "' must be a number, got ",
                                            raw[key].dump()));
      return raw[key].get<double>();
    };
    seed_ = static_cast<uint64_t>(num("seed", 42));
    if (!desc.empty()) {
      check_json_depth(desc, "frozen_lake_workflow: workflow_args.desc", kMaxJsonDepth, "workflow");
      const json d = json::parse(desc);
      if (!d.is_array()) throw ConfigError("workflow", "frozen_lake_workflow: workflow_args.desc must be a list of rows");
      for (const auto& row : d) {
        if (!row.is_string()) throw ConfigError("workflow", "frozen_lake_workflow: workflow_args.desc rows must be strings");
        map_.push_back(row.get<std::string>());
      }
      FrozenLake check(map_, slippery_);  // validates
    } else {
      map_ = FrozenLake::generate_random_map(static_cast<int>(num("size", 4)), num("p", 0.8), seed_,
                                             static_cast<int>(env_max_steps_));
    }
  }

  std::vector<buffer::Experience> run(RunContext& ctx) override {
    TRINITY_ASSERT(ctx.model != nullptr, "frozen_lake_workflow: run without a model");
    std::vector<buffer::Experience> out;
    for (int64_t i = 0; i < std::max<int64_t>(1, ctx.repeat_times); ++i) out.push_back(episode(ctx, ctx.run_id_base + i));
    return out;
  }

 private:
  // Trinity's parse: the last ``` ``` block; Up/Down/Left/Right (any case) or 1..4 (Left, Down,
  // Right, Up); -1 = invalid.
  static int parse_action(const std::string& text) {
    std::string last;
    bool found = false;
    size_t pos = 0;
    while (true) {
      const size_t open = text.find("```", pos);
      if (open == std::string::npos) break;
      const size_t close = text.find("```", open + 3);
      if (close == std::string::npos) break;
      last = text.substr(open + 3, close - open - 3);
      found = true;
      pos = close + 3;
    }
    if (!found) return -1;
    const std::string a = lower(trim(last));
    if (a == "left" || a == "1") return FrozenLake::kLeft;
    if (a == "down" || a == "2") return FrozenLake::kDown;
    if (a == "right" || a == "3") return FrozenLake::kRight;
    if (a == "up" || a == "4") return FrozenLake::kUp;
    return -1;
  }

  std::string observation(const FrozenLake& env, int64_t steps, bool unchanged) const {
    std::string s = strcat("Current Observation (", steps, "): \n", env.render(),
                           "\nYou have not achieved the goal, P has not reached G yet. Please give the next action.");
    if (unchanged && steps > 0)
      s += "\nYour last response is invalid. Your position didn't change at all. You may need to recheck your "
           "thinking process, action outputted, and the format of response. Remember, you should only output the "
           "NEXT ACTION at each interation in the ``` ```. For example, if you want to move up, you should output "
           "```Up```.";
    if (env_max_steps_ - steps > 0) s += strcat("\nThe maximum number of steps remaining is ", env_max_steps_ - steps, ".");
    return s;
  }

  buffer::Experience episode(RunContext& ctx, int64_t run) {
    ModelClient& model = *ctx.model;
    FrozenLake env(map_, slippery_);
    env.reset();
    Rng local(seed_ * 1000003ULL + static_cast<uint64_t>(run));
    Rng& rng = ctx.rng ? *ctx.rng : local;

    json msgs = json::array();
    msgs.push_back({{"role", "system"}, {"content", kSystemPrompt}});
    msgs.push_back({{"role", "user"}, {"content", observation(env, 0, false)}});

    buffer::Experience e;
    e.eid.run = run;
    e.tokens = model.apply_chat_template(msgs.dump(), true);
    e.prompt_length = static_cast<int64_t>(e.tokens.size());
    const int64_t max_len = model.max_model_len();
    const int64_t budget = task_.rollout_args.max_tokens ? *task_.rollout_args.max_tokens : max_len - e.prompt_length;

    double reward = 0.0;
    int64_t steps = 0;
    bool done = false, truncated = false;
    std::string last_finish;
    for (int64_t turn = 0; turn < agent_max_steps_; ++turn) {
      const int64_t used = static_cast<int64_t>(e.tokens.size()) - e.prompt_length;
      const int64_t remaining = std::min(budget - used, max_len - static_cast<int64_t>(e.tokens.size()));
      if (remaining <= 0) {
        truncated = true;
        break;
      }
      GenOptions opt = gen_options_for(task_, 1, ctx.rng);
      opt.max_tokens = remaining;
      const auto samples = model.generate_ids(e.tokens, opt);
      if (samples.empty()) throw ValueError("workflow", "frozen_lake_workflow: the model returned no sample");
      const Sample& s = samples[0];
      append_sampled(e, s);
      e.model_version = s.model_version;
      last_finish = s.finish_reason;
      const json before = msgs;
      msgs.push_back({{"role", "assistant"}, {"content", s.text}});
      if (s.finish_reason == "length") {  // a cut-off turn does not act
        truncated = true;
        break;
      }
      const std::string prev_obs = env.render();
      const int action = parse_action(s.text);
      if (action >= 0) {
        const FrozenLake::Step st = env.step(action, rng);
        reward += st.reward;
        done = st.terminated;
      }
      ++steps;  // an invalid action is a counted no-op step, as in Trinity
      if (done || steps >= env_max_steps_ || turn + 1 >= agent_max_steps_) break;
      const std::string user = observation(env, steps, env.render() == prev_obs);
      const std::vector<int32_t> glue =
          turn_glue_ids(model, before.dump(), json::array({{{"role", "user"}, {"content", user}}}).dump(), s, {},
                        "frozen_lake_workflow");
      const int64_t after = static_cast<int64_t>(e.tokens.size() + glue.size());
      if (after - e.prompt_length >= budget || after >= max_len) {
        truncated = true;
        break;
      }
      append_glue(e, glue);
      msgs.push_back({{"role", "user"}, {"content", user}});
    }
    if (truncated) {
      e.truncate_status = buffer::TruncateStatus::kResponseTruncated;
      reward = 0.0;  // Trinity's MultiTurnWorkflow zeroes the reward of a truncated trajectory
    }
    e.reward = reward;
    e.metrics["env_steps"] = static_cast<double>(steps);
    e.metrics["env_done"] = done ? 1.0 : 0.0;
    e.metrics["test_score"] = reward;
    e.info = json{{"env_steps", steps}, {"env_done", done ? 1 : 0}, {"success", env.at_goal() ? 1 : 0},
                  {"finish_reason", last_finish}, {"desc", map_}}
                 .dump();
    decode_texts(e, model);
    e.messages = msgs.dump();
    return e;
  }

  buffer::Task task_;
  int64_t env_max_steps_ = 8, agent_max_steps_ = 10;
  bool slippery_ = false;
  uint64_t seed_ = 42;
  std::vector<std::string> map_;
};

}  // namespace

void detail::register_frozen_lake_workflow() {
  add_builtin(
      "frozen_lake_workflow",
      [](const buffer::Task& t) -> std::unique_ptr<Workflow> { return std::make_unique<FrozenLakeWorkflow>(t); },
      /*reads_prompt=*/false);  // the map comes from the row's seed / size / p
}

}  // namespace trinity::workflow
