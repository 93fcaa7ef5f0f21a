// Trinity-RFT's environment workflows by name, as presets of env_workflow over an AgentGym server of
// that environment (WooooDyy/AgentGym agentenv-alfworld / -webshop / -sciworld; docs/environments.md):
//   alfworld_workflow            system prompt, "Observation: ..." user turns ("Nothing happens." gets
//                                upstream's hint), the first <action>...</action> is the action ("" when
//                                missing), max_env_steps 30, reward = the env reward when done, else -0.1.
//   step_wise_alfworld_workflow  the same, one experience per turn (Trinity's RewardPropagationWorkflow:
//                                every step gets the episode reward; info.anchor = the observation).
//   webshop_workflow             15 steps, reward = the env reward when done, else -0.1. Upstream also
//                                checks each action against the page's clickables before sending it;
//                                here the server judges the action (an invalid one is its observation).
//   sciworld_workflow            30 steps, reward = the best cumulative score / 100.
// The environment server's URL: workflow_args.env_url, else $ALFWORLD_ENV_URL / $WEBSHOP_ENV_URL /
// $SCIWORLD_ENV_URL. The task selects the game: a task row field (game / session_id / data_idx) or a
// numeric prompt. Every env_workflow argument may still be overridden in workflow_args.
#include <nlohmann/json.hpp>

#include "workflow/builtins.h"
#include "workflow/env_workflow.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;

const char* kAlfworldSystem = R"(
You are an agent interacting with a virtual text-based environment.

## Notes:
At each step, you should first think then perform action to fulfill the instruction. You should ALWAYS wrap your thinking with the <think> </think> tag and wrap your action with the <action> </action> tag.
You should ALWAYS take one action each step.
DO NOT try to interact with the user at anytime. Finish the task by yourself.

## Action Format:
Below are the available commands you can use:
  look:                             look around your current location
  inventory:                        check your current inventory(you can only have 1 item in your inventory)
  go to (receptacle):               move to a receptacle
  open (receptacle):                open a receptacle
  close (receptacle):               close a receptacle
  take (object) from (receptacle):  take an object from a receptacle
  move (object) to (receptacle):  place an object in or on a receptacle
  examine (something):              examine a receptacle or an object
  use (object):                     use an object
  heat (object) with (receptacle):  heat an object using a receptacle
  clean (object) with (receptacle): clean an object using a receptacle
  cool (object) with (receptacle):  cool an object using a receptacle
  slice (object) with (object):     slice an object using a sharp object

For example your output should be like this:
<think> To solve the task, I need first to ... </think><action>go to cabinet 1</action>
)";

const char* kWebshopSystem = R"(
You are an agent interacting with a virtual text-baed web shopping environments to testout your ability. Your job is to find follow the Instruction provided and mimic the steps to buy the item that are closest to the Instruct provided.

## Action Format:
You should give both the action_name and action_arg like the format `action_name[action_arg]`. You can execute two types of actions, search and click.
- When the button `[button] Search [button_]` is available in the current observation, you can execute the action <action>search[xxx]</action> (you should type the query you want to search in the square brackets here).
- You can click buttons `[button] xxx [button_]` that is available in the current observation, by execute the action <action>click[xxx]</action>.

Below are some examples of action formats.
- <action>search[white shoes]</action>
- <action>click[Buy Now]</action>

## Notes:
At each step, you should first think then perform action to fulfill the instruction. You should ALWAYS wrap your thinking with the <think> </think> tag and wrap your action with the <action> </action> tag.
You should ALWAYS take one action each step.
You should finish the task and buy the item within 15 steps.
DONOT try to interact with the user at anytime. Finish the task and buy the item by yourself.
)";

const char* kSciworldSystem = R"(
You are an agent, you job is to do some scientific experiment in a virtual test-based environments.

## Notes:
At each step, you should first think then perform action to fulfill the instruction. You should ALWAYS wrap your thinking with the <think> </think> tag and wrap your action with the <action> </action> tag.
You should ALWAYS take one action each step.
DONOT try to interact with the user at anytime. Finish the task by yourself.

## Action Format:
Below are the available commands you can use:
    open OBJ: open a container
    close OBJ: close a container
    activate OBJ: activate a device
    deactivate OBJ: deactivate a device
    connect OBJ to OBJ: connect electrical components
    disconnect OBJ: disconnect electrical components
    use OBJ [on OBJ]: use a device/item
    look around: describe the current room
    examine OBJ: describe an object in detail
    look at OBJ: describe a container's contents
    read OBJ: read a note or book
    move OBJ to OBJ: move an object to a container
    pick up OBJ: move an object to the inventory
    pour OBJ into OBJ: pour a liquid into a container
    mix OBJ: chemically mix a container
    teleport to LOC: teleport to a specific room
    focus on OBJ: signal intent on a task object
    wait: task no action for 10 steps
    wait1: task no action for a step

For example your output should be like this:
<think> Now I will check the bedroom ... </think><action>teleport to bedroom</action>
)";

// Upstream's parse_action: the text between the first <action> and the next </action> (to the end when
// unterminated); "" when there is no <action>.
json action_args(const char* system, int64_t max_steps, const char* agentgym_env, json reset_extra = json::object()) {
  return json{{"transport", "agentgym"},
              {"agentgym_env", agentgym_env},
              {"system_prompt", system},
              {"max_steps", max_steps},
              {"action_field", "action"},
              {"action_pattern", "<action>([\\s\\S]*?)(?:</action>|$)"},
              {"action_match", "first"},
              {"invalid_action", ""},
              {"reset_args", std::move(reset_extra)}};
}

// Reward = the env reward of the final step when the episode finished, else `penalty`.
std::function<double(const std::vector<double>&, bool)> done_reward_or(double penalty) {
  return [penalty](const std::vector<double>& r, bool done) { return done && !r.empty() ? r.back() : penalty; };
}

EnvPreset alfworld(bool step_wise) {
  EnvPreset p;
  p.name = step_wise ? "step_wise_alfworld_workflow" : "alfworld_workflow";
  json a = action_args(kAlfworldSystem, 30, "alfworld", {{"world_type", "Text"}});
  if (step_wise) a["step_wise"] = true;
  p.workflow_args = a.dump();
  p.url_env_var = "ALFWORLD_ENV_URL";
  p.task_reset_key = "game";
  p.episode_reward = done_reward_or(-0.1);
  p.format_observation = [](const std::string& obs) {
    std::string o = obs;
    if (o.find("Nothing happens.") != std::string::npos)
      o += "Please check if the action you take is valid or you have carefully followed the action format.";
    return "Observation: " + o;
  };
  return p;
}

EnvPreset webshop() {
  EnvPreset p;
  p.name = "webshop_workflow";
  p.workflow_args = action_args(kWebshopSystem, 15, "webshop").dump();
  p.url_env_var = "WEBSHOP_ENV_URL";
  p.task_reset_key = "session_id";
  p.episode_reward = done_reward_or(-0.1);
  p.format_observation = [](const std::string& obs) { return "Observation: " + obs; };
  return p;
}

EnvPreset sciworld() {
  EnvPreset p;
  p.name = "sciworld_workflow";
  p.workflow_args = action_args(kSciworldSystem, 30, "sciworld").dump();
  p.url_env_var = "SCIWORLD_ENV_URL";
  p.task_reset_key = "data_idx";
  p.episode_reward = [](const std::vector<double>& r, bool) {
    double cur = 0, best = 0;
    for (double x : r) cur += x, best = std::max(best, cur);
    return best / 100.0;
  };
  p.format_observation = [](const std::string& obs) { return "Observation: \n" + obs; };
  return p;
}

}  // namespace

void detail::register_env_presets() {
  for (const EnvPreset& p : {alfworld(false), alfworld(true), webshop(), sciworld()})
    add_builtin(p.name, [p](const buffer::Task& t) -> std::unique_ptr<Workflow> { return make_env_workflow(t, p); });
}

}  // namespace trinity::workflow
