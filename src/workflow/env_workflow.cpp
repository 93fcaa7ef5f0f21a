// env_workflow: one episode per run against an environment server (see env_workflow.h).
#include "workflow/env_workflow.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "core/error.h"
#include "core/log.h"
#include "core/text.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tool_call_parse.h"
#include "workflow/builtins.h"
#include "workflow/simple_workflow.h"
#include "workflow/turn_glue.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;

const char* kDefaultSystemPrompt =
    "You are an agent acting in an environment. Each user message describes what you observe; reply with your "
    "next action.";

enum class RewardRule { kLast, kSum, kDiscounted };

struct EnvArgs {
  env::SessionOptions session;
  int64_t max_steps = 10;
  std::optional<int64_t> max_tokens_per_turn;  // per generate call, within the episode budget
  std::string system_prompt = kDefaultSystemPrompt;
  std::string observation_template = "{text}";
  bool tool_call = false;
  std::string action_field = "message";
  std::string action_pattern;                 // "" = the whole response text (trimmed)
  bool first_match = false;                   // action_match: first | last
  std::optional<std::string> invalid_action;  // sent when the pattern finds nothing (default: the text)
  std::string tool_name = "step", tool_description = "Take one action in the environment.";
  RewardRule reward = RewardRule::kLast;
  double gamma = 1.0;
  json reset_args = json::object();
  std::vector<std::string> reset_keys;
  bool step_wise = false, step_reward_env = false;
  int64_t connect_retries = 2;
};

// The preset's defaults overlaid with the task's workflow_args.
json merged_args(const std::string& name, const EnvPreset& preset, const buffer::Task& task,
                 const std::vector<std::string>& allowed) {
  const WorkflowArgs defaults(name, preset.workflow_args, allowed);
  const WorkflowArgs given(name, task.workflow_args, allowed);
  json j = json::parse(defaults.text);
  const json overrides = json::parse(given.text);
  // The task's max_steps or max_env_steps (Trinity's name) replaces the preset's either.
  if (overrides.contains("max_steps") || overrides.contains("max_env_steps"))
    j.erase("max_steps"), j.erase("max_env_steps");
  for (const auto& [k, v] : overrides.items()) j[k] = v;
  return j;
}

EnvArgs parse_args(const buffer::Task& task, const EnvPreset& preset) {
  const std::string& wf = preset.name;
  static const std::vector<std::string> kAllowed = {"env_url",
                                                    "transport",
                                                    "agentgym_env",
                                                    "api_key_env",
                                                    "max_steps",
                                                    "max_env_steps",
                                                    "max_tokens_per_turn",
                                                    "system_prompt",
                                                    "observation_template",
                                                    "action_format",
                                                    "action_field",
                                                    "action_pattern",
                                                    "action_match",
                                                    "invalid_action",
                                                    "tool_name",
                                                    "tool_description",
                                                    "reward",
                                                    "gamma",
                                                    "reset_args",
                                                    "reset_keys",
                                                    "step_wise",
                                                    "step_reward",
                                                    "timeout",
                                                    "connect_retries"};
  const json j = merged_args(wf, preset, task, kAllowed);
  auto bad = [&](const std::string& key, const std::string& want) {
    return ConfigError("workflow", strcat(wf, ": workflow_args.", key, " must be ", want, ", got ", j[key].dump()));
  };
  auto str = [&](const std::string& key, const std::string& def) {
    if (!j.contains(key) || j[key].is_null()) return def;
    if (!j[key].is_string()) throw bad(key, "a string");
    return j[key].get<std::string>();
  };
  auto num = [&](const std::string& key, double def) {
    if (!j.contains(key) || j[key].is_null()) return def;
    if (!j[key].is_number()) throw bad(key, "a number");
    return j[key].get<double>();
  };
  auto boolean = [&](const std::string& key, bool def) {
    if (!j.contains(key) || j[key].is_null()) return def;
    if (!j[key].is_boolean()) throw bad(key, "true or false");
    return j[key].get<bool>();
  };
  auto choice = [&](const std::string& key, const std::string& def, const std::vector<std::string>& options) {
    const std::string v = str(key, def);
    if (std::find(options.begin(), options.end(), v) == options.end()) {
      std::string list;
      for (const auto& o : options) list += (list.empty() ? "" : ", ") + o;
      throw bad(key, "one of " + list);
    }
    return v;
  };

  EnvArgs a;
  a.session.url = str("env_url", "");
  if (a.session.url.empty() && !preset.url_env_var.empty())
    if (const char* v = std::getenv(preset.url_env_var.c_str())) a.session.url = v;
  if (a.session.url.empty())
    throw ConfigError("workflow", strcat(wf,
                                         ": workflow_args.env_url is required (the environment server, e.g. "
                                         "http://127.0.0.1:8000)",
                                         preset.url_env_var.empty() ? "" : strcat(", or set $", preset.url_env_var)));
  a.session.protocol = env::parse_protocol(choice("transport", "ws", {"ws", "http", "agentgym"}));
  a.session.agentgym_env = str("agentgym_env", "");
  a.session.timeout_s = num("timeout", 60);
  if (!(a.session.timeout_s > 0)) throw bad("timeout", "> 0 seconds");
  if (const std::string key_env = str("api_key_env", ""); !key_env.empty()) {
    const char* v = std::getenv(key_env.c_str());
    if (!v || !*v)
      throw ConfigError("workflow", strcat(wf, ": workflow_args.api_key_env names $", key_env, ", which is not set"));
    a.session.api_key = v;
  }
  a.max_steps = static_cast<int64_t>(num("max_steps", num("max_env_steps", 10)));  // max_env_steps: Trinity's name
  if (a.max_steps < 1) throw bad("max_steps", ">= 1");
  if (j.contains("max_tokens_per_turn") && !j["max_tokens_per_turn"].is_null()) {
    a.max_tokens_per_turn = static_cast<int64_t>(num("max_tokens_per_turn", 0));
    if (*a.max_tokens_per_turn < 1) throw bad("max_tokens_per_turn", ">= 1");
  }
  a.system_prompt = str("system_prompt", kDefaultSystemPrompt);
  a.observation_template = str("observation_template", "{text}");
  a.tool_call = choice("action_format", "text", {"text", "tool_call"}) == "tool_call";
  a.action_field = str("action_field", "message");
  a.action_pattern = str("action_pattern", "");
  if (!a.action_pattern.empty()) {
    try {
      std::regex check(a.action_pattern);
    } catch (const std::regex_error& e) {
      throw bad("action_pattern", strcat("a valid regular expression (", e.what(), ")"));
    }
  }
  a.first_match = choice("action_match", "last", {"first", "last"}) == "first";
  if (j.contains("invalid_action") && !j["invalid_action"].is_null()) a.invalid_action = str("invalid_action", "");
  a.tool_name = str("tool_name", a.tool_name);
  a.tool_description = str("tool_description", a.tool_description);
  const std::string rule = choice("reward", "last", {"last", "sum", "discounted"});
  a.reward = rule == "sum" ? RewardRule::kSum : rule == "discounted" ? RewardRule::kDiscounted : RewardRule::kLast;
  a.gamma = num("gamma", 1.0);
  if (a.gamma < 0 || a.gamma > 1) throw bad("gamma", "in [0, 1]");
  if (j.contains("reset_args") && !j["reset_args"].is_null()) {
    if (!j["reset_args"].is_object()) throw bad("reset_args", "an object of reset fields");
    a.reset_args = j["reset_args"];
  }
  if (j.contains("reset_keys") && !j["reset_keys"].is_null()) {
    if (!j["reset_keys"].is_array()) throw bad("reset_keys", "a list of task row keys");
    for (const auto& k : j["reset_keys"]) {
      if (!k.is_string()) throw bad("reset_keys", "a list of task row keys");
      a.reset_keys.push_back(k.get<std::string>());
    }
  }
  a.step_wise = boolean("step_wise", false);
  a.step_reward_env = choice("step_reward", "episode", {"episode", "env"}) == "env";
  a.connect_retries = static_cast<int64_t>(num("connect_retries", 2));
  if (a.connect_retries < 0) throw bad("connect_retries", ">= 0");
  return a;
}

// Fills the observation template: {text}, {json}, {reward}, {step}, {max_steps}, {remaining}, {task}
// and {<field>} of the observation object; "{{" and "}}" are literal braces.
std::string render_observation(const std::string& tmpl, const env::StepResult& r, const json& obs, int64_t step,
                               int64_t max_steps, const std::string& task_text, const std::string& wf) {
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    const char c = tmpl[i];
    if ((c == '{' || c == '}') && i + 1 < tmpl.size() && tmpl[i + 1] == c) {
      out += c, ++i;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    const size_t close = tmpl.find('}', i);
    if (close == std::string::npos) {
      out += tmpl.substr(i);
      break;
    }
    const std::string key = tmpl.substr(i + 1, close - i - 1);
    i = close;
    if (key == "text")
      out += r.observation_text;
    else if (key == "json")
      out += obs.dump();
    else if (key == "reward")
      out += r.reward ? strcat(*r.reward) : "null";
    else if (key == "step")
      out += std::to_string(step);
    else if (key == "max_steps")
      out += std::to_string(max_steps);
    else if (key == "remaining")
      out += std::to_string(std::max<int64_t>(0, max_steps - step));
    else if (key == "task")
      out += task_text;
    else if (obs.is_object() && obs.contains(key))
      out += obs[key].is_string() ? obs[key].get<std::string>() : obs[key].dump();
    else {
      std::string fields;
      if (obs.is_object())
        for (const auto& [k, v] : obs.items()) fields += (fields.empty() ? "" : ", ") + k;
      throw ValueError("workflow", strcat(wf, ": observation_template names {", key,
                                          "}, which is neither a template variable (text, json, reward, step, "
                                          "max_steps, remaining, task) nor an observation field (",
                                          fields.empty() ? "none" : fields, ")"));
    }
  }
  return out;
}

// A failed run the explorer counts by reason (rollout/failed/env_<reason>).
[[noreturn]] void rethrow_env(const env::EnvError& e) {
  std::string msg = e.what();
  if (msg.rfind("[env] ", 0) == 0) msg = msg.substr(6);
  throw Error("env", strcat(env::fail_reason_name(e.reason()), ": ", msg));
}

// The action JSON of the first call of `tool_name` in `text`, in the template's tool-call convention
// (or the other one: small models mix them up); fills the assistant message's content / tool_calls.
std::optional<json> tool_call_action(const std::string& text, const std::string& tool_name, tok::ToolCallFormat fmt,
                                     json& assistant) {
  const auto other =
      fmt == tok::ToolCallFormat::kHermes ? tok::ToolCallFormat::kLlama3Json : tok::ToolCallFormat::kHermes;
  tok::ParsedToolCalls p = tok::parse_tool_calls(text, fmt);
  if (p.calls.empty()) p = tok::parse_tool_calls(text, other);
  for (const auto& c : p.calls) {
    if (c.name != tool_name) continue;
    json args = json::parse(c.arguments, nullptr, false);
    if (!args.is_object()) continue;
    assistant["content"] = p.content ? trim(*p.content) : "";
    assistant["tool_calls"] = json::array(
        {{{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}}});
    return args;
  }
  return std::nullopt;
}

class EnvWorkflow : public Workflow {
 public:
  EnvWorkflow(const buffer::Task& task, EnvPreset preset, SessionOpener opener)
      : task_(task), preset_(std::move(preset)), opener_(std::move(opener)), args_(parse_args(task, preset_)) {
    if (!opener_) opener_ = [](const env::SessionOptions& o) { return env::open_session(o); };
    if (!args_.action_pattern.empty()) pattern_ = std::regex(args_.action_pattern);
    const json row = json::parse(task.raw.empty() ? "{}" : task.raw, nullptr, false);
    reset_ = args_.reset_args;
    if (row.is_object()) {
      if (row.contains("reset_args") && row["reset_args"].is_object())
        for (const auto& [k, v] : row["reset_args"].items()) reset_[k] = v;
      if (!preset_.task_reset_key.empty()) {
        const std::string& k = preset_.task_reset_key;
        char* end = nullptr;
        const std::string d = trim(task.task_desc);
        const long long v = d.empty() ? 0 : std::strtoll(d.c_str(), &end, 10);
        if (row.contains(k))
          reset_[k] = row[k];
        else if (!d.empty() && end && *end == '\0')
          reset_[k] = v;
        else
          throw ValueError("workflow", strcat(preset_.name, ": the environment server resets by '", k,
                                              "' (an index): the task row needs a '", k,
                                              "' field or a numeric prompt (task_desc), got '", d.substr(0, 120), "'"));
      }
      for (const auto& k : args_.reset_keys) {
        if (!row.contains(k))
          throw ValueError("workflow", strcat(preset_.name, ": workflow_args.reset_keys names '", k,
                                              "', which the task row has not: ", task.raw.substr(0, 200)));
        reset_[k] = row[k];
      }
    }
  }

  std::vector<buffer::Experience> run(RunContext& ctx) override {
    TRINITY_ASSERT(ctx.model != nullptr, "env_workflow: run without a model");
    std::vector<buffer::Experience> out;
    for (int64_t i = 0; i < std::max<int64_t>(1, ctx.repeat_times); ++i) {
      auto exps = episode(ctx, ctx.run_id_base + i);
      for (auto& e : exps) out.push_back(std::move(e));
    }
    return out;
  }

 private:
  std::unique_ptr<env::Session> connect(ModelClient& model) {
    for (int64_t attempt = 0;; ++attempt) {
      try {
        return opener_(args_.session);
      } catch (const env::EnvError& e) {
        if (!e.transient() || attempt >= args_.connect_retries || model.cancelled()) rethrow_env(e);
        log::warn(strcat(preset_.name, ": ", e.what(), " (retry ", attempt + 1, " of ", args_.connect_retries, ")"));
        std::this_thread::sleep_for(std::chrono::milliseconds(200 << std::min<int64_t>(attempt, 4)));
      }
    }
  }

  std::string tools_json(env::Session& s) const {
    json params = {{"type", "object"}, {"properties", json::object()}};
    const json schema = json::parse(s.schema().empty() ? "{}" : s.schema(), nullptr, false);
    if (schema.is_object() && schema.contains("action") && schema["action"].is_object()) {
      params = schema["action"];
      if (params.contains("properties") && params["properties"].is_object()) params["properties"].erase("metadata");
      params.erase("title");
    }
    return json::array(
               {{{"type", "function"},
                 {"function",
                  {{"name", args_.tool_name}, {"description", args_.tool_description}, {"parameters", params}}}}})
        .dump();
  }

  // The action JSON for the model's answer; `valid` false when it had no usable action.
  json action_for(const std::string& text, bool& valid, json& assistant) {
    valid = true;
    assistant = {{"role", "assistant"}, {"content", text}};
    if (args_.tool_call) {
      if (auto a = tool_call_action(text, args_.tool_name, tool_format_, assistant)) return *a;
      valid = false;
      return json{{args_.action_field, trim(text)}};
    }
    std::string act = trim(text);
    if (pattern_) {
      std::string found;
      bool any = false;
      for (auto it = std::sregex_iterator(text.begin(), text.end(), *pattern_); it != std::sregex_iterator(); ++it) {
        found = it->size() > 1 ? (*it)[1].str() : (*it)[0].str();
        any = true;
        if (args_.first_match) break;
      }
      if (any) {
        act = trim(found);
      } else {
        valid = false;
        if (args_.invalid_action) act = *args_.invalid_action;
      }
    }
    return json{{args_.action_field, act}};
  }

  std::string user_text(const env::StepResult& obs, const json& obs_json, int64_t step) const {
    std::string t = render_observation(args_.observation_template, obs, obs_json, step, args_.max_steps,
                                       task_.task_desc, preset_.name);
    return preset_.format_observation ? preset_.format_observation(t) : t;
  }

  double episode_reward(const std::vector<double>& rewards, bool done) const {
    if (preset_.episode_reward) return preset_.episode_reward(rewards, done);
    if (rewards.empty()) return 0.0;
    switch (args_.reward) {
      case RewardRule::kLast:
        return rewards.back();
      case RewardRule::kSum: {
        double s = 0;
        for (double r : rewards) s += r;
        return s;
      }
      case RewardRule::kDiscounted: {
        double s = 0, g = 1;
        for (double r : rewards) s += g * r, g *= args_.gamma;
        return s;
      }
    }
    return 0.0;
  }

  std::vector<buffer::Experience> episode(RunContext& ctx, int64_t run) {
    ModelClient& model = *ctx.model;
    std::unique_ptr<env::Session> session = connect(model);
    struct Closer {
      env::Session* s;
      ~Closer() { s->close(); }
    } closer{session.get()};
    try {
      return play(ctx, model, *session, run);
    } catch (const env::EnvError& e) {
      rethrow_env(e);
    }
  }

  std::vector<buffer::Experience> play(RunContext& ctx, ModelClient& model, env::Session& session, int64_t run) {
    const std::string tools = args_.tool_call ? tools_json(session) : "";
    if (args_.tool_call)
      tool_format_ = tok::tool_call_format_for_template(
          model.render_chat_template(json::array({{{"role", "user"}, {"content", "x"}}}).dump(), true, tools));
    env::StepResult obs = session.reset(reset_.dump());
    json obs_json = json::parse(obs.observation_json, nullptr, false);
    const std::string wf = preset_.name;

    json msgs = json::array();
    if (!args_.system_prompt.empty()) msgs.push_back({{"role", "system"}, {"content", args_.system_prompt}});
    msgs.push_back({{"role", "user"}, {"content", user_text(obs, obs_json, 0)}});

    const int64_t max_len = model.max_model_len();
    std::vector<buffer::Experience> steps;  // step_wise: one per turn
    buffer::Experience whole;               // concatenated
    whole.eid.run = run;
    whole.tokens = model.apply_chat_template(msgs.dump(), true, tools);
    whole.prompt_length = static_cast<int64_t>(whole.tokens.size());
    const int64_t budget =
        task_.rollout_args.max_tokens ? *task_.rollout_args.max_tokens : max_len - whole.prompt_length;
    if (whole.prompt_length >= max_len)
      throw ValueError("workflow", strcat(wf, ": the first prompt (system prompt + first observation) has ",
                                          whole.prompt_length, " tokens, the model's max_model_len is ", max_len,
                                          ": raise model.max_prompt_tokens or shorten the prompt"));

    std::vector<double> rewards;
    std::vector<std::string> anchors;
    int64_t invalid = 0, turns = 0;
    bool done = false, truncated = false;
    std::string last_finish;
    while (turns < args_.max_steps) {
      if (model.cancelled()) throw CancelledError(strcat(wf, ": cancelled"));
      GenOptions opt = gen_options_for(task_, 1, ctx.rng);
      std::vector<int32_t> prompt;
      bool budget_bound = false;  // the episode's token budget (not max_tokens_per_turn) limits this turn
      if (args_.step_wise) {
        prompt = model.apply_chat_template(msgs.dump(), true, tools);
        const int64_t room = max_len - static_cast<int64_t>(prompt.size());
        if (room <= 0) {
          truncated = true;
          break;
        }
        opt.max_tokens =
            std::min(opt.max_tokens.value_or(room), std::min(room, args_.max_tokens_per_turn.value_or(room)));
      } else {
        const int64_t used = static_cast<int64_t>(whole.tokens.size()) - whole.prompt_length;
        const int64_t remaining = std::min(budget - used, max_len - static_cast<int64_t>(whole.tokens.size()));
        if (remaining <= 0) {
          truncated = true;
          break;
        }
        opt.max_tokens = std::min(remaining, args_.max_tokens_per_turn.value_or(remaining));
        budget_bound = *opt.max_tokens == remaining;
        prompt = whole.tokens;
      }
      const auto samples = model.generate_ids(prompt, opt);
      if (samples.empty()) throw ValueError("workflow", strcat(wf, ": the model returned no sample"));
      const Sample& s = samples[0];
      TRINITY_ASSERT(s.logprobs.size() == s.ids.size(), "sample logprobs/ids size mismatch");
      last_finish = s.finish_reason;
      ++turns;
      if (args_.step_wise) {
        buffer::Experience e;
        e.eid.run = run;
        e.eid.step = turns - 1;
        e.tokens = prompt;
        e.prompt_length = static_cast<int64_t>(prompt.size());
        e.tokens.insert(e.tokens.end(), s.ids.begin(), s.ids.end());
        e.logprobs = s.logprobs;
        e.action_mask.assign(s.ids.size(), 1);
        e.model_version = s.model_version;
        if (s.finish_reason == "length") e.truncate_status = buffer::TruncateStatus::kResponseTruncated;
        steps.push_back(std::move(e));
        anchors.push_back(obs.observation_text);
      } else {
        append_sampled(whole, s);
        whole.model_version = s.model_version;
      }
      bool valid = true;
      json assistant;
      const json action = action_for(s.text, valid, assistant);
      const json before = msgs;
      msgs.push_back(assistant);
      // A turn cut by the episode budget ends it (and does not act); one cut by max_tokens_per_turn acts.
      if (s.finish_reason == "length" && !args_.step_wise && budget_bound) {
        truncated = true;
        break;
      }
      if (!valid) ++invalid;
      obs = session.step(action.dump());
      obs_json = json::parse(obs.observation_json, nullptr, false);
      rewards.push_back(obs.reward.value_or(0.0));
      done = obs.done;
      if (done || turns >= args_.max_steps) break;
      json next = {{"role", args_.tool_call && assistant.contains("tool_calls") ? "tool" : "user"},
                   {"content", user_text(obs, obs_json, turns)}};
      if (!args_.step_wise) {
        const std::vector<int32_t> glue =
            turn_glue_ids(model, before.dump(), json::array({next}).dump(), s, TurnTemplate{tools, std::nullopt}, wf);
        const int64_t after = static_cast<int64_t>(whole.tokens.size() + glue.size());
        if (after - whole.prompt_length >= budget || after >= max_len) {
          truncated = true;
          break;
        }
        append_glue(whole, glue);
      }
      msgs.push_back(next);
    }

    double reward = episode_reward(rewards, done);
    if (truncated && !args_.step_wise) reward = 0.0;  // Trinity's MultiTurnWorkflow zeroes a truncated trajectory
    std::map<std::string, double> metrics = {{"env_steps", static_cast<double>(rewards.size())},
                                             {"env_done", done ? 1.0 : 0.0},
                                             {"env_reward", reward},
                                             {"invalid_actions", static_cast<double>(invalid)},
                                             {"turns", static_cast<double>(turns)}};
    const json info_base = {{"env_steps", rewards.size()},  {"env_done", done ? 1 : 0},   {"env_rewards", rewards},
                            {"finish_reason", last_finish}, {"invalid_actions", invalid}, {"reset_args", reset_}};
    if (!args_.step_wise) {
      if (truncated) whole.truncate_status = buffer::TruncateStatus::kResponseTruncated;
      whole.reward = reward;
      whole.metrics = metrics;
      whole.info = info_base.dump();
      whole.messages = msgs.dump();
      if (!tools.empty()) whole.tools = tools;
      decode_texts(whole, model);
      return {std::move(whole)};
    }
    for (size_t t = 0; t < steps.size(); ++t) {
      auto& e = steps[t];
      e.reward = args_.step_reward_env ? (t < rewards.size() ? rewards[t] : 0.0) : reward;
      e.metrics = metrics;
      json info = info_base;
      info["anchor"] = anchors[t];
      info["step"] = t;
      e.info = info.dump();
      if (!tools.empty()) e.tools = tools;
      decode_texts(e, model);
    }
    if (!steps.empty()) steps.back().messages = msgs.dump();
    return steps;
  }

  buffer::Task task_;
  EnvPreset preset_;
  SessionOpener opener_;
  EnvArgs args_;
  std::optional<std::regex> pattern_;
  json reset_;
  tok::ToolCallFormat tool_format_ = tok::ToolCallFormat::kHermes;  // of this episode's chat template
};

}  // namespace

std::unique_ptr<Workflow> make_env_workflow(const buffer::Task& task, const EnvPreset& preset, SessionOpener opener) {
  return std::make_unique<EnvWorkflow>(task, preset, std::move(opener));
}

void detail::register_env_workflows() {
  add_builtin("env_workflow", [](const buffer::Task& t) -> std::unique_ptr<Workflow> { return make_env_workflow(t); });
  register_env_presets();
}

}  // namespace trinity::workflow
