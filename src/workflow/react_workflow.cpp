// react_workflow: a ReAct tool-using agent run natively (Trinity's agentscope ReAct math workflows,
// trinity-rft.md §5.4: agentscope_react_math_workflow, agentscopev0_react_math_workflow,
// as_react_workflow / agentscope_react_workflow). The model gets [system, user = task_desc] and the
// tools (execute_python_code, optionally calculator) rendered by its chat template; each turn it
// generates, its tool calls (hermes <tool_call> blocks or Llama-3 JSON, from the template) run and
// their results go back as `tool` messages, up to max_turns; the first turn without tool calls is
// the final answer, scored by the reward (default math_boxed_reward on the GSM8K answer after ####,
// as upstream). One concatenated experience per run (workflow/turn_glue.h): sampled ids mask 1 with
// rollout logprobs, template glue and tool results mask 0. A template that ignores `tools` gets the
// tool descriptions in the system prompt instead.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_limits.h"
#include "tokenizer/tool_call_parse.h"
#include "workflow/builtins.h"
#include "workflow/simple_workflow.h"
#include "workflow/tools/calculator_tool.h"
#include "workflow/tools/python_tool.h"
#include "workflow/turn_glue.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;

// Upstream's GSM8K ReAct prompt (the agentscope v0/v1 workflows wrap it in newlines; the \boxed{{}}
// braces are upstream's, a str.format escape that was never formatted).
const char* kMathPrompt =
    "You are an agent specialized in solving math problems with tools. Please solve the math problem given to you. "
    "You can write and execute Python code to perform calculation or verify your answer. You should return your final "
    "answer within \\boxed{{}}.";

struct Variant {
  const char* name;
  int64_t max_turns;  // agentscope ReActAgent max_iters: v1 default 10, the v0 workflow sets 5
  bool newline_prompt;
};

const Variant kVariants[] = {{"react_workflow", 10, false},
                             {"agentscope_react_math_workflow", 10, true},
                             {"agentscopev0_react_math_workflow", 5, true},
                             {"as_react_workflow", 10, false},
                             {"agentscope_react_workflow", 10, false}};

struct Tally {
  int64_t turns = 0, tool_calls = 0, tool_errors = 0, tool_timeouts = 0;
  int64_t unisolated = 0;  // python runs that had network access although isolation was asked for
};

class ReactWorkflow : public Workflow {
 public:
  ReactWorkflow(const buffer::Task& task, const Variant& v) : task_(task), name_(v.name) {
    WorkflowArgs wa(name_, task.workflow_args,
                    {"max_turns", "max_iters", "type", "tools", "tool_call_format", "enable_thinking",
                     "format_score_coef", "tool_timeout", "tool_cpu_s", "tool_memory_mb", "tool_max_processes",
                     "tool_max_output_bytes", "isolate_network"});
    max_turns_ = wa.get_int("max_turns", wa.get_int("max_iters", v.max_turns));
    if (max_turns_ < 1)
      throw ConfigError("workflow", strcat(name_, ": workflow_args.max_turns must be >= 1, got ", max_turns_));
    const json raw_type = json::parse(wa.text).value("type", json("gsm8k"));
    if (raw_type != "gsm8k")
      throw ConfigError("workflow", strcat(name_, ": workflow_args.type ", raw_type.dump(),
                                           " is not supported; the only task template is \"gsm8k\""));
    const json args = json::parse(wa.text);
    if (args.contains("enable_thinking") && !args["enable_thinking"].is_null())
      tt_.enable_thinking = wa.get_bool("enable_thinking", false);
    format_ = "auto";
    if (args.contains("tool_call_format")) {
      if (!args["tool_call_format"].is_string())
        throw ConfigError("workflow", strcat(name_, ": workflow_args.tool_call_format must be a string, got ",
                                             args["tool_call_format"].dump()));
      format_ = args["tool_call_format"].get<std::string>();
      if (format_ != "auto") {
        try {
          tok::tool_call_format_from_name(format_);
        } catch (const ConfigError&) {
          throw ConfigError("workflow", strcat(name_, ": workflow_args.tool_call_format '", format_,
                                               "' is not one of auto, hermes, llama3_json"));
        }
      }
    }
    tools_ = {"execute_python_code"};
    if (args.contains("tools")) {
      const json& t = args["tools"];
      if (!t.is_array())
        throw ConfigError("workflow", strcat(name_, ": workflow_args.tools must be a list, got ", t.dump()));
      tools_.clear();
      for (const auto& n : t) {
        if (n != "execute_python_code" && n != "calculator")
          throw ConfigError("workflow", strcat(name_, ": workflow_args.tools: unknown tool ", n.dump(),
                                               "; available: execute_python_code, calculator"));
        tools_.push_back(n.get<std::string>());
      }
    }
    py_.timeout_s = wa.get_double("tool_timeout", 300);
    py_.cpu_s = wa.get_double("tool_cpu_s", 0);
    if (!(py_.timeout_s > 0) || !(py_.cpu_s >= 0))
      throw ConfigError("workflow", strcat(name_,
                                           ": workflow_args.tool_timeout must be > 0 and tool_cpu_s >= 0 (0 = "
                                           "the timeout), got ",
                                           py_.timeout_s, " and ", py_.cpu_s));
    const int64_t mb = wa.get_int("tool_memory_mb", 2048);
    if (mb < 64) throw ConfigError("workflow", strcat(name_, ": workflow_args.tool_memory_mb must be >= 64, got ", mb));
    py_.memory_bytes = static_cast<uint64_t>(mb) << 20;
    const int64_t procs = wa.get_int("tool_max_processes", 64);
    const int64_t outb = wa.get_int("tool_max_output_bytes", 16384);
    if (procs < 1 || outb < 1)
      throw ConfigError("workflow", strcat(name_,
                                           ": workflow_args.tool_max_processes and tool_max_output_bytes must be "
                                           ">= 1, got ",
                                           procs, " and ", outb));
    py_.max_processes = static_cast<uint64_t>(procs);
    py_.max_output_bytes = static_cast<size_t>(outb);
    py_.isolate_network = wa.get_bool("isolate_network", true);
    try {
      validate(py_);
    } catch (const ConfigError& e) {
      throw ConfigError("workflow", strcat(name_, ": ", e.what()));
    }
    system_prompt_ = !task.system_prompt.empty() ? task.system_prompt
                     : v.newline_prompt          ? strcat("\n", kMathPrompt, "\n")
                                                 : std::string(kMathPrompt);
    // Upstream's GSM8KRewardFn / MathBoxedRewardFn: the last \boxed{} against the answer after ####.
    if (!task.reward_fn.empty()) {
      reward_ = make_reward_fn(task.reward_fn, task.reward_fn_args);
    } else {
      // reward_fn_args without a reward_fn go to it, as upstream passes them to its GSM8K reward.
      json ra = {{"with_think", false}, {"format_score_coef", wa.get_double("format_score_coef", 0.1)}};
      if (!task.reward_fn_args.empty()) {
        check_json_depth(task.reward_fn_args, strcat(name_, ": reward_fn_args"), kMaxJsonDepth, "workflow");
        const json extra = json::parse(task.reward_fn_args, nullptr, /*allow_exceptions=*/false);
        if (!extra.is_object())
          throw ConfigError("workflow", strcat(name_, ": reward_fn_args must be a JSON object, got '",
                                               task.reward_fn_args.substr(0, 200), "'"));
        ra.update(extra);
      }
      reward_ = make_reward_fn("math_boxed_reward", ra.dump());
    }
  }

  std::vector<buffer::Experience> run(RunContext& ctx) override {
    TRINITY_ASSERT(ctx.model != nullptr, name_, ": run without a model");
    std::vector<buffer::Experience> out;
    for (int64_t i = 0; i < std::max<int64_t>(1, ctx.repeat_times); ++i)
      out.push_back(episode(ctx, ctx.run_id_base + i));
    return out;
  }

 private:
  std::vector<std::unique_ptr<Tool>> make_tools(ModelClient& model) const {
    std::vector<std::unique_ptr<Tool>> t;
    for (const auto& n : tools_) {
      if (n == "calculator") {
        t.push_back(std::make_unique<CalculatorTool>());
        continue;
      }
      PythonToolOptions o = py_;
      o.cancelled = [&model] { return model.cancelled(); };
      t.push_back(std::make_unique<PythonTool>(o));
    }
    return t;
  }

  // Tool instructions for a template that renders no tools (Llama 3's, plain ChatML), in the
  // convention the parser expects (Llama 3.1's wording for JSON calls).
  static std::string tools_in_prompt(const json& schemas, tok::ToolCallFormat f) {
    std::string s = "\n\nYou have access to the following functions:\n\n";
    for (const auto& t : schemas) s += t.dump(4) + "\n\n";
    if (f == tok::ToolCallFormat::kHermes)
      s += "To call a function, return a JSON object with the function name and arguments within "
           "<tool_call></tool_call> "
           "XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>";
    else
      s +=
          "To call a function, respond with only a JSON object in the format {\"name\": function name, \"parameters\": "
          "dictionary of argument name and its value}. Do not use variables.";
    s += "\nWhen you have the final answer, reply without a function call.";
    return s;
  }

  buffer::Experience episode(RunContext& ctx, int64_t run) {
    ModelClient& model = *ctx.model;
    auto tools = make_tools(model);
    json schemas = json::array();
    for (const auto& t : tools) schemas.push_back(json::parse(t->schema_json()));
    TurnTemplate tt = tt_;
    tt.tools_json = schemas.dump();

    json msgs = json::array();
    msgs.push_back({{"role", "system"}, {"content", system_prompt_}});
    msgs.push_back({{"role", "user"}, {"content", task_.task_desc}});
    // Does the template render the tools? If not, describe them in the system prompt.
    const std::string with = model.render_chat_template(msgs.dump(), true, tt.tools_json, tt.enable_thinking);
    const bool renders_tools = with != model.render_chat_template(msgs.dump(), true, "", tt.enable_thinking);
    const tok::ToolCallFormat fmt =
        format_ != "auto" ? tok::tool_call_format_from_name(format_) : tok::tool_call_format_for_template(with);
    if (!renders_tools) {
      msgs[0]["content"] = system_prompt_ + tools_in_prompt(schemas, fmt);
      tt.tools_json.clear();
    }

    buffer::Experience e;
    e.eid.run = run;
    e.tokens = model.apply_chat_template(msgs.dump(), true, tt.tools_json, tt.enable_thinking);
    e.prompt_length = static_cast<int64_t>(e.tokens.size());
    const int64_t max_len = model.max_model_len();
    const int64_t budget = task_.rollout_args.max_tokens ? *task_.rollout_args.max_tokens : max_len - e.prompt_length;

    Tally tally;
    std::optional<std::string> answer;  // the final turn's text
    bool truncated = false;
    std::string last_finish;
    for (int64_t turn = 0; turn < max_turns_; ++turn) {
      const int64_t used = static_cast<int64_t>(e.tokens.size()) - e.prompt_length;
      const int64_t remaining = std::min(budget - used, max_len - static_cast<int64_t>(e.tokens.size()));
      if (remaining <= 0) {
        truncated = true;
        break;
      }
      GenOptions opt = gen_options_for(task_, 1, ctx.rng);
      opt.max_tokens = remaining;
      opt.enable_thinking = tt.enable_thinking;
      const auto samples = model.generate_ids(e.tokens, opt);
      if (samples.empty()) throw ValueError("workflow", strcat(name_, ": the model returned no sample"));
      const Sample& s = samples[0];
      append_sampled(e, s);
      e.model_version = s.model_version;
      last_finish = s.finish_reason;
      ++tally.turns;
      const json before = msgs;
      if (s.finish_reason == "length") {  // a cut-off turn neither calls tools nor answers
        msgs.push_back({{"role", "assistant"}, {"content", s.text}});
        truncated = true;
        break;
      }
      tok::ParsedToolCalls parsed = tok::parse_tool_calls(s.text, fmt);
      if (parsed.calls.empty()) {
        msgs.push_back({{"role", "assistant"}, {"content", s.text}});
        answer = s.text;
        break;
      }
      json assistant = {{"role", "assistant"}, {"content", parsed.content.value_or("")}, {"tool_calls", json::array()}};
      json results = json::array();
      for (const auto& c : parsed.calls) {
        assistant["tool_calls"].push_back(
            {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
        results.push_back(
            {{"role", "tool"}, {"tool_call_id", c.id}, {"name", c.name}, {"content", run_tool(tools, c, tally)}});
      }
      msgs.push_back(assistant);
      for (const auto& r : results) msgs.push_back(r);
      if (turn + 1 >= max_turns_) break;  // tool results the model never reads are not glued on
      const std::vector<int32_t> glue = turn_glue_ids(model, before.dump(), results.dump(), s, tt, name_);
      const int64_t after = static_cast<int64_t>(e.tokens.size() + glue.size());
      if (after - e.prompt_length >= budget || after >= max_len) {
        truncated = true;
        break;
      }
      append_glue(e, glue);
    }
    if (truncated) e.truncate_status = buffer::TruncateStatus::kResponseTruncated;
    RewardInput in;
    const std::string response = answer.value_or("");
    in.response = response;
    in.truth = task_.truth;
    in.response_tokens = static_cast<int64_t>(std::count(e.action_mask.begin(), e.action_mask.end(), 1));
    const RewardComponents rc = reward_(in);
    e.reward = sum_components(rc);
    for (const auto& [k, val] : rc) e.metrics[k] = val;
    e.metrics["turns"] = static_cast<double>(tally.turns);
    e.metrics["tool_calls"] = static_cast<double>(tally.tool_calls);
    e.metrics["tool_errors"] = static_cast<double>(tally.tool_errors);
    e.metrics["tool_timeouts"] = static_cast<double>(tally.tool_timeouts);
    e.metrics["answered"] = answer ? 1.0 : 0.0;
    e.metrics["react_memory_length"] = static_cast<double>(msgs.size()) - 1;  // upstream: the agent's memory
    e.info = json{{"turns", tally.turns},
                  {"tool_calls", tally.tool_calls},
                  {"tool_call_format", tok::tool_call_format_name(fmt)},
                  {"tools_in_system_prompt", !renders_tools},
                  {"tool_runs_without_network_isolation", tally.unisolated},
                  {"finish_reason", last_finish}}
                 .dump();
    decode_texts(e, model);
    e.messages = msgs.dump();
    return e;
  }

  std::string run_tool(std::vector<std::unique_ptr<Tool>>& tools, const tok::ToolCall& c, Tally& tally) const {
    ++tally.tool_calls;
    for (auto& t : tools) {
      if (t->name() != c.name) continue;
      const ToolResult r = t->call(c.arguments);
      tally.tool_errors += r.error ? 1 : 0;
      tally.tool_timeouts += r.timed_out ? 1 : 0;
      tally.unisolated += r.unisolated ? 1 : 0;
      return r.text;
    }
    ++tally.tool_errors;
    std::string names;
    for (const auto& t : tools) names += (names.empty() ? "" : ", ") + t->name();
    return strcat("Error: there is no tool named '", c.name, "'; available: ", names, ".");
  }

  buffer::Task task_;
  std::string name_;
  int64_t max_turns_ = 10;
  std::string format_;  // auto | hermes | llama3_json
  std::vector<std::string> tools_;
  PythonToolOptions py_;
  TurnTemplate tt_;
  std::string system_prompt_;
  RewardFn reward_;
};

}  // namespace

void detail::register_react_workflow() {
  for (const Variant& v : kVariants)
    add_builtin(v.name, [&v](const buffer::Task& t) -> std::unique_ptr<Workflow> {
      return std::make_unique<ReactWorkflow>(t, v);
    });
}

}  // namespace trinity::workflow
