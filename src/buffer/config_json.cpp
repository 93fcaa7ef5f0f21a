// Buffer config structs from JSON (see config_json.h), read with core/json_fields.h: every key not
// consumed is reported as unknown with its full path and a did-you-mean.
#include "buffer/config_json.h"

#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/json_fields.h"
#include "core/log.h"

namespace trinity::buffer {

using nlohmann::json;

namespace {

using Fields = JsonFields;

void selector_from_json(const json& j, SelectorConfig& out, const std::string& path, std::vector<std::string>* unk) {
  Fields f(j, path, "config", unk);
  f.str("selector_type", out.selector_type);
  f.i64("seed", out.seed);
  f.str_list("feature_keys", out.feature_keys);
  f.object_text("kwargs", out.kwargs);
  f.finish();
}

void rollout_from_json(const json& j, RolloutArgs& out, const std::string& path, std::vector<std::string>* unk) {
  Fields f(j, path, "config", unk);
  f.opt_f64("temperature", out.temperature);
  f.opt_f64("top_p", out.top_p);
  f.opt_i64("top_k", out.top_k);
  f.opt_i64("max_tokens", out.max_tokens);
  f.opt_i64("logprobs", out.logprobs);
  f.opt_i64("n", out.n);
  f.finish();
}

void replay_from_json(const json& j, ReplayConfig& out, const std::string& path, std::vector<std::string>* unk) {
  Fields f(j, path, "config", unk);
  f.boolean("enable", out.enable);
  f.str("priority_fn", out.priority_fn);
  f.opt_f64("reuse_cooldown_time", out.reuse_cooldown_time);
  if (const json* a = f.get("priority_fn_args")) {
    Fields g(*a, f.at("priority_fn_args"), "config", unk);
    g.f64("decay", out.decay);
    g.i64("use_count_limit", out.use_count_limit);
    g.f64("sigma", out.sigma);
    g.finish();
  }
  f.finish();
}

}  // namespace

void format_config_from_json(const json& j, FormatConfig& out, const std::string& path, std::vector<std::string>* unk) {
  Fields f(j, path, "config", unk);
  f.str("prompt_type", out.prompt_type);
  f.str("prompt_key", out.prompt_key);
  f.str("response_key", out.response_key);
  f.str("system_prompt_key", out.system_prompt_key);
  f.str("system_prompt", out.system_prompt);
  f.str("reply_prefix", out.reply_prefix);
  f.str("messages_key", out.messages_key);
  f.str("tools_key", out.tools_key);
  f.str("image_key", out.image_key);
  f.str("video_key", out.video_key);
  f.str("workflow_key", out.workflow_key);
  f.str("reward_fn_key", out.reward_fn_key);
  f.str("chosen_key", out.chosen_key);
  f.str("rejected_key", out.rejected_key);
  f.boolean("enable_concatenated_multi_turn", out.enable_concatenated_multi_turn);
  f.str("chat_template", out.chat_template);
  f.opt_bool("enable_thinking", out.enable_thinking);
  f.finish();
  if (out.prompt_type != "messages" && out.prompt_type != "plaintext")
    throw f.error("prompt_type", strcat("'", out.prompt_type, "' is not messages or plaintext"));
}

void storage_config_from_json(const json& j, StorageConfig& out, const std::string& path, std::vector<std::string>* unk) {
  Fields f(j, path, "config", unk);
  f.str("name", out.name);
  f.str("storage_type", out.storage_type);
  f.str("path", out.path);
  f.i64("capacity", out.capacity);
  f.f64("max_read_timeout", out.max_read_timeout);
  if (const json* r = f.get("replay_buffer")) replay_from_json(*r, out.replay_buffer, f.at("replay_buffer"), unk);
  f.i64("max_retry_times", out.max_retry_times);
  f.f64("max_retry_interval", out.max_retry_interval);
  f.str("schema_type", out.schema_type);
  f.i64("batch_size", out.batch_size);
  f.str("split", out.split);
  f.str("subset_name", out.subset_name);
  if (const json* fm = f.get("format")) format_config_from_json(*fm, out.format, f.at("format"), unk);
  f.boolean("enable_progress_bar", out.enable_progress_bar);
  if (const json* s = f.get("data_selector")) selector_from_json(*s, out.data_selector, f.at("data_selector"), unk);
  f.f64("lease_timeout", out.lease_timeout);
  f.str("reader_id", out.reader_id);
  for (const char* k : {"ray_namespace", "tokenizer_path", "total_epochs", "total_steps", "use_priority_queue",
                        "index", "wrap_in_ray"})
    f.ignore(k);
  f.finish();
  std::string t = out.storage_type;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  out.storage_type = t;
  if (t != "queue" && t != "sql" && t != "sqlite" && t != "file")
    throw f.error("storage_type", strcat("'", out.storage_type, "' is not queue, sql or file"));
  if (out.capacity <= 0) throw f.error("capacity", strcat("must be > 0, got ", out.capacity));
  if (out.lease_timeout <= 0) throw f.error("lease_timeout", strcat("must be > 0, got ", out.lease_timeout));
}

void taskset_config_from_json(const json& j, TasksetConfig& out, const std::string& path, std::vector<std::string>* unk) {
  Fields f(j, path, "config", unk);
  f.str("name", out.name);
  f.str("storage_type", out.storage_type);
  f.str("path", out.path);
  f.str("subset_name", out.subset_name);
  f.str("split", out.split);
  if (const json* fm = f.get("format")) format_config_from_json(*fm, out.format, f.at("format"), unk);
  if (const json* r = f.get("rollout_args")) rollout_from_json(*r, out.rollout_args, f.at("rollout_args"), unk);
  f.object_text("workflow_args", out.workflow_args);
  f.object_text("reward_fn_args", out.reward_fn_args);
  f.str("default_workflow_type", out.default_workflow_type);
  f.str("default_reward_fn_type", out.default_reward_fn_type);
  if (const json* s = f.get("data_selector")) selector_from_json(*s, out.data_selector, f.at("data_selector"), unk);
  if (const json* s = f.get("task_selector")) {  // deprecated alias
    log::warn("config: ", f.at("task_selector"), " is deprecated; use data_selector");
    selector_from_json(*s, out.data_selector, f.at("task_selector"), unk);
  }
  f.i64("repeat_times", out.repeat_times);
  f.boolean("enable_progress_bar", out.enable_progress_bar);
  f.i64("max_retry_times", out.max_retry_times);
  f.f64("max_retry_interval", out.max_retry_interval);
  f.i64("index", out.index);
  f.boolean("is_eval", out.is_eval);
  f.i64("batch_size", out.batch_size);
  f.i64("total_epochs", out.total_epochs);
  f.opt_i64("total_steps", out.total_steps);
  f.boolean("strict", out.strict);
  f.ignore("ray_namespace");
  f.finish();
  if (out.repeat_times <= 0) throw f.error("repeat_times", strcat("must be > 0, got ", out.repeat_times));
}

}  // namespace trinity::buffer
