// to_yaml: the fully resolved Config (every key, derived values included) as YAML, in the order of
// docs/config.md. Used by `trinity config check` and written next to checkpoints by the launcher.
#include <yaml-cpp/yaml.h>

#include "config/config.h"

namespace trinity::config {

namespace {

using YAML::BeginMap;
using YAML::BeginSeq;
using YAML::EndMap;
using YAML::EndSeq;
using YAML::Key;
using YAML::Value;

template <typename T>
void kv(YAML::Emitter& e, const char* k, const T& v) {
  e << Key << k << Value << v;
}
template <typename T>
void kv(YAML::Emitter& e, const char* k, const std::optional<T>& v) {
  e << Key << k << Value;
  if (v) e << *v;
  else e << YAML::Null;
}
void kv(YAML::Emitter& e, const char* k, const std::string& v) {
  e << Key << k << Value << YAML::DoubleQuoted << v;
}

void arg(YAML::Emitter& e, const algo::ArgValue& v) {
  std::visit(
      [&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::monostate>) e << YAML::Null;
        else if constexpr (std::is_same_v<X, std::string>) e << YAML::DoubleQuoted << x;
        else e << x;
      },
      v.v);
}

void argmap(YAML::Emitter& e, const char* k, const algo::ArgMap& m) {
  e << Key << k << Value << BeginMap;
  for (const auto& [ak, av] : m) {
    e << Key << ak << Value;
    arg(e, av);
  }
  e << EndMap;
}

template <typename T>
void optstr(YAML::Emitter& e, const char* k, const std::optional<T>& v) {
  e << Key << k << Value;
  if (v) e << *v;
  else e << YAML::Null;
}

void format(YAML::Emitter& e, const buffer::FormatConfig& f) {
  e << Key << "format" << Value << BeginMap;
  kv(e, "prompt_type", f.prompt_type);
  kv(e, "prompt_key", f.prompt_key);
  kv(e, "response_key", f.response_key);
  kv(e, "system_prompt_key", f.system_prompt_key);
  kv(e, "system_prompt", f.system_prompt);
  kv(e, "reply_prefix", f.reply_prefix);
  kv(e, "messages_key", f.messages_key);
  kv(e, "tools_key", f.tools_key);
  kv(e, "image_key", f.image_key);
  kv(e, "video_key", f.video_key);
  kv(e, "workflow_key", f.workflow_key);
  kv(e, "reward_fn_key", f.reward_fn_key);
  kv(e, "chosen_key", f.chosen_key);
  kv(e, "rejected_key", f.rejected_key);
  kv(e, "enable_concatenated_multi_turn", f.enable_concatenated_multi_turn);
  kv(e, "chat_template", f.chat_template);
  optstr(e, "enable_thinking", f.enable_thinking);
  e << EndMap;
}

void selector(YAML::Emitter& e, const buffer::SelectorConfig& s) {
  e << Key << "data_selector" << Value << BeginMap;
  kv(e, "selector_type", s.selector_type);
  kv(e, "seed", s.seed);
  e << Key << "feature_keys" << Value << YAML::Flow << s.feature_keys;
  kv(e, "kwargs", s.kwargs);
  e << EndMap;
}

void taskset(YAML::Emitter& e, const buffer::TasksetConfig& t) {
  e << BeginMap;
  kv(e, "name", t.name);
  kv(e, "storage_type", t.storage_type);
  kv(e, "path", t.path);
  kv(e, "subset_name", t.subset_name);
  kv(e, "split", t.split);
  format(e, t.format);
  e << Key << "rollout_args" << Value << BeginMap;
  optstr(e, "temperature", t.rollout_args.temperature);
  optstr(e, "top_p", t.rollout_args.top_p);
  optstr(e, "top_k", t.rollout_args.top_k);
  optstr(e, "logprobs", t.rollout_args.logprobs);
  optstr(e, "max_tokens", t.rollout_args.max_tokens);
  e << EndMap;
  kv(e, "workflow_args", t.workflow_args);
  kv(e, "reward_fn_args", t.reward_fn_args);
  kv(e, "default_workflow_type", t.default_workflow_type);
  kv(e, "default_reward_fn_type", t.default_reward_fn_type);
  selector(e, t.data_selector);
  kv(e, "repeat_times", t.repeat_times);
  kv(e, "enable_progress_bar", t.enable_progress_bar);
  kv(e, "max_retry_times", t.max_retry_times);
  kv(e, "max_retry_interval", t.max_retry_interval);
  kv(e, "index", t.index);
  kv(e, "is_eval", t.is_eval);
  kv(e, "batch_size", t.batch_size);
  kv(e, "total_epochs", t.total_epochs);
  optstr(e, "total_steps", t.total_steps);
  kv(e, "strict", t.strict);
  e << EndMap;
}

void storage(YAML::Emitter& e, const buffer::StorageConfig& s) {
  e << BeginMap;
  kv(e, "name", s.name);
  kv(e, "storage_type", s.storage_type);
  kv(e, "path", s.path);
  kv(e, "capacity", s.capacity);
  kv(e, "max_read_timeout", s.max_read_timeout);
  e << Key << "replay_buffer" << Value << BeginMap;
  kv(e, "enable", s.replay_buffer.enable);
  kv(e, "priority_fn", s.replay_buffer.priority_fn);
  optstr(e, "reuse_cooldown_time", s.replay_buffer.reuse_cooldown_time);
  e << Key << "priority_fn_args" << Value << BeginMap;
  kv(e, "decay", s.replay_buffer.decay);
  kv(e, "use_count_limit", s.replay_buffer.use_count_limit);
  kv(e, "sigma", s.replay_buffer.sigma);
  e << EndMap << EndMap;
  kv(e, "max_retry_times", s.max_retry_times);
  kv(e, "max_retry_interval", s.max_retry_interval);
  kv(e, "schema_type", s.schema_type);
  kv(e, "batch_size", s.batch_size);
  kv(e, "split", s.split);
  kv(e, "subset_name", s.subset_name);
  format(e, s.format);
  kv(e, "enable_progress_bar", s.enable_progress_bar);
  selector(e, s.data_selector);
  kv(e, "lease_timeout", s.lease_timeout);
  kv(e, "reader_id", s.reader_id);
  e << EndMap;
}

void inference(YAML::Emitter& e, const InferenceModelConfig& m, bool aux) {
  e << BeginMap;
  kv(e, "name", m.name);
  if (aux) kv(e, "model_path", m.model_path);
  kv(e, "engine_num", m.engine_num);
  kv(e, "seed", m.seed);
  kv(e, "temperature", m.temperature);
  kv(e, "top_p", m.top_p);
  kv(e, "top_k", m.top_k);
  kv(e, "logprobs", m.logprobs);
  kv(e, "repetition_penalty", m.repetition_penalty);
  kv(e, "max_model_len", m.max_model_len);
  kv(e, "max_prompt_tokens", m.max_prompt_tokens);
  kv(e, "max_response_tokens", m.max_response_tokens);
  kv(e, "min_response_tokens", m.min_response_tokens);
  kv(e, "enable_prompt_truncation", m.enable_prompt_truncation);
  optstr(e, "enable_thinking", m.enable_thinking);
  kv(e, "chat_template", m.chat_template);
  kv(e, "ignore_eos", m.ignore_eos);
  kv(e, "enable_history", m.enable_history);
  kv(e, "enable_openai_api", m.enable_openai_api);
  kv(e, "kv_cache_bytes", m.kv_cache_bytes);
  e << EndMap;
}

void algorithm(YAML::Emitter& e, const Config& c) {
  const algo::AlgorithmSpec& a = c.algorithm;
  e << Key << "algorithm" << Value << BeginMap;
  kv(e, "algorithm_type", a.algorithm_type);
  kv(e, "repeat_times", c.repeat_times);
  optstr(e, "advantage_fn", a.advantage_fn);
  optstr(e, "policy_loss_fn", a.policy_loss_fn);
  optstr(e, "kl_penalty_fn", a.kl_penalty_fn);
  optstr(e, "kl_loss_fn", a.kl_loss_fn);
  optstr(e, "entropy_loss_fn", a.entropy_loss_fn);
  optstr(e, "sample_strategy", a.sample_strategy);
  optstr(e, "loss_agg_mode", a.loss_agg_mode);
  argmap(e, "advantage_fn_args", a.advantage_fn_args);
  argmap(e, "policy_loss_fn_args", a.policy_loss_fn_args);
  argmap(e, "kl_penalty_fn_args", a.kl_penalty_fn_args);
  argmap(e, "kl_loss_fn_args", a.kl_loss_fn_args);
  argmap(e, "entropy_loss_fn_args", a.entropy_loss_fn_args);
  argmap(e, "sample_strategy_args", a.sample_strategy_args);
  const OptimizerConfig& o = c.optimizer;
  e << Key << "optimizer" << Value << BeginMap;
  kv(e, "lr", o.lr);
  kv(e, "lr_warmup_steps", o.lr_warmup_steps);
  kv(e, "lr_warmup_steps_ratio", o.lr_warmup_steps_ratio);
  kv(e, "min_lr_ratio", o.min_lr_ratio);
  kv(e, "lr_scheduler_type", o.lr_scheduler_type);
  kv(e, "optimizer_type", o.optimizer_type);
  e << Key << "betas" << Value << YAML::Flow << o.betas;
  kv(e, "weight_decay", o.weight_decay);
  kv(e, "clip_grad", o.clip_grad);
  e << EndMap << EndMap;
}

}  // namespace

std::string to_yaml(const Config& c) {
  YAML::Emitter e;
  e.SetDoublePrecision(17);
  e << BeginMap;
  kv(e, "mode", c.mode);
  kv(e, "project", c.project);
  kv(e, "group", c.group);
  kv(e, "name", c.name);
  kv(e, "checkpoint_root_dir", c.checkpoint_root_dir);
  kv(e, "checkpoint_job_dir", c.job_dir());
  kv(e, "continue_from_checkpoint", c.continue_from_checkpoint);
  algorithm(e, c);
  const ModelConfig& m = c.model;
  e << Key << "model" << Value << BeginMap;
  kv(e, "model_path", m.model_path);
  kv(e, "critic_model_path", m.critic_model_path);
  kv(e, "max_model_len", m.max_model_len);
  kv(e, "max_prompt_tokens", m.max_prompt_tokens);
  kv(e, "max_response_tokens", m.max_response_tokens);
  kv(e, "min_response_tokens", m.min_response_tokens);
  kv(e, "temperature", m.temperature);
  kv(e, "top_p", m.top_p);
  kv(e, "top_k", m.top_k);
  kv(e, "logprobs", m.logprobs);
  kv(e, "repetition_penalty", m.repetition_penalty);
  optstr(e, "enable_thinking", m.enable_thinking);
  kv(e, "custom_chat_template", m.custom_chat_template);
  kv(e, "chat_template_path", m.chat_template_path);
  kv(e, "enable_prompt_truncation", m.enable_prompt_truncation);
  e << EndMap;
  const BufferConfig& b = c.buffer;
  e << Key << "buffer" << Value << BeginMap;
  kv(e, "batch_size", b.batch_size);
  kv(e, "train_batch_size", b.train_batch_size);
  kv(e, "total_epochs", b.total_epochs);
  optstr(e, "total_steps", b.total_steps);
  kv(e, "cache_dir", b.cache_dir);
  e << Key << "explorer_input" << Value << BeginMap;
  e << Key << "tasksets" << Value << BeginSeq;
  for (const auto& t : b.explorer_input.tasksets) taskset(e, t);
  e << EndSeq << Key << "eval_tasksets" << Value << BeginSeq;
  for (const auto& t : b.explorer_input.eval_tasksets) taskset(e, t);
  e << EndSeq;
  kv(e, "default_workflow_type", b.explorer_input.default_workflow_type);
  kv(e, "default_eval_workflow_type", b.explorer_input.default_eval_workflow_type);
  kv(e, "default_reward_fn_type", b.explorer_input.default_reward_fn_type);
  e << EndMap << Key << "trainer_input" << Value << BeginMap << Key << "experience_buffer" << Value;
  storage(e, b.trainer_input.experience_buffer);
  e << Key << "auxiliary_buffers" << Value << BeginMap;
  for (const auto& [n, s] : b.trainer_input.auxiliary_buffers) {
    e << Key << n << Value;
    storage(e, s);
  }
  e << EndMap << EndMap << EndMap;
  const ExplorerConfig& x = c.explorer;
  e << Key << "explorer" << Value << BeginMap;
  kv(e, "name", x.name);
  kv(e, "runner_per_model", x.runner_per_model);
  kv(e, "max_timeout", x.max_timeout);
  kv(e, "max_retry_times", x.max_retry_times);
  e << Key << "env_vars" << Value << BeginMap;
  for (const auto& [k, v] : x.env_vars) kv(e, k.c_str(), v);
  e << EndMap;
  kv(e, "concurrent_mode", x.concurrent_mode);
  optstr(e, "max_repeat_times_per_runner", x.max_repeat_times_per_runner);
  kv(e, "eval_interval", x.eval_interval);
  kv(e, "eval_on_startup", x.eval_on_startup);
  kv(e, "bench_on_latest_checkpoint", x.bench_on_latest_checkpoint);
  kv(e, "runner_state_report_interval", x.runner_state_report_interval);
  kv(e, "proxy_port", x.proxy_port);
  kv(e, "listen_address", x.listen_address);
  e << Key << "rollout_model" << Value;
  inference(e, x.rollout_model, false);
  e << Key << "auxiliary_models" << Value << BeginSeq;
  for (const auto& a : x.auxiliary_models) inference(e, a, true);
  e << EndSeq << Key << "dynamic_timeout" << Value << BeginMap;
  kv(e, "enable", x.dynamic_timeout.enable);
  kv(e, "ratio", x.dynamic_timeout.ratio);
  e << EndMap << EndMap;
  const SynchronizerConfig& y = c.synchronizer;
  e << Key << "synchronizer" << Value << BeginMap;
  kv(e, "sync_method", y.sync_method);
  kv(e, "sync_style", y.sync_style);
  kv(e, "sync_interval", y.sync_interval);
  kv(e, "sync_offset", y.sync_offset);
  kv(e, "sync_timeout", y.sync_timeout);
  e << EndMap;
  const TrainerConfig& t = c.trainer;
  e << Key << "trainer" << Value << BeginMap;
  kv(e, "name", t.name);
  kv(e, "save_interval", t.save_interval);
  optstr(e, "total_steps", t.total_steps);
  kv(e, "grad_clip", t.grad_clip);
  kv(e, "save_hf_checkpoint", t.save_hf_checkpoint);
  kv(e, "save_hf_dtype", t.save_hf_dtype);
  optstr(e, "max_checkpoints_to_keep", t.max_checkpoints_to_keep);
  kv(e, "enable_preview", t.enable_preview);
  kv(e, "use_dynamic_bsz", t.use_dynamic_bsz);
  kv(e, "max_token_len_per_gpu", t.max_token_len_per_gpu);
  kv(e, "micro_batch_size", t.micro_batch_size);
  kv(e, "fix_actor_microbatch_loss_scale", t.fix_actor_microbatch_loss_scale);
  e << Key << "critic" << Value << BeginMap;
  kv(e, "lr", t.critic.lr);
  kv(e, "cliprange_value", t.critic.cliprange_value);
  e << EndMap << EndMap;
  e << Key << "monitor" << Value << BeginMap;
  kv(e, "monitor_type", c.monitor.monitor_type);
  kv(e, "detailed_stats", c.monitor.detailed_stats);
  kv(e, "monitor_args", c.monitor.monitor_args);
  e << EndMap << Key << "log" << Value << BeginMap;
  kv(e, "level", c.log.level);
  e << EndMap << Key << "stages" << Value << BeginSeq;
  for (const auto& s : c.stages) {
    e << BeginMap;
    kv(e, "stage_name", s.stage_name);
    optstr(e, "mode", s.mode);
    e << Key << "replaces" << Value << YAML::Flow << s.sections;
    e << EndMap;
  }
  e << EndSeq << EndMap;
  return std::string(e.c_str()) + "\n";
}

}  // namespace trinity::config
