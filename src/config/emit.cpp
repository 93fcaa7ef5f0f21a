// to_yaml: the fully resolved Config (every key, derived values included) as YAML, in the order of
// docs/config.md. Used by `trinity config check` and written next to checkpoints by the launcher.
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "config/config.h"
#include "core/error.h"

namespace trinity::config {

namespace {

using YAML::BeginMap;
using YAML::BeginSeq;
using YAML::EndMap;
using YAML::EndSeq;
using YAML::Key;
using YAML::Value;

// The shortest text that reads back as exactly `d`, always with a '.' or an exponent so that it
// reads back as a float (an algorithm argument 0.0 must not come back as the integer 0).
std::string float_text(double d) {
  if (std::isnan(d)) return ".nan";
  if (std::isinf(d)) return d > 0 ? ".inf" : "-.inf";
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string t = buf;
  if (t.find_first_of(".eE") == std::string::npos) t += ".0";
  return t;
}
// A value: floats through float_text, everything else as yaml-cpp writes it.
template <typename T>
void value(YAML::Emitter& e, const T& v) {
  if constexpr (std::is_floating_point_v<T>)
    e << float_text(v);
  else
    e << v;
}

template <typename T>
void kv(YAML::Emitter& e, const char* k, const T& v) {
  e << Key << k << Value;
  value(e, v);
}
template <typename T>
void kv(YAML::Emitter& e, const char* k, const std::optional<T>& v) {
  e << Key << k << Value;
  if (v)
    value(e, *v);
  else e << YAML::Null;
}
void kv(YAML::Emitter& e, const char* k, const std::string& v) {
  e << Key << k << Value << YAML::DoubleQuoted << v;
}

// A free-form mapping kept as JSON text (workflow_args, kwargs, ...): emitted as a YAML mapping (JSON
// is YAML flow syntax), so that loading the output reads the same mapping back.
// Strings double-quoted (so "6" stays a string), floats through float_text.
void json_value(YAML::Emitter& e, const nlohmann::json& j) {
  if (j.is_object()) {
    e << BeginMap;
    for (const auto& [k, v] : j.items()) {
      e << Key << k << Value;
      json_value(e, v);
    }
    e << EndMap;
  } else if (j.is_array()) {
    e << BeginSeq;
    for (const auto& v : j) json_value(e, v);
    e << EndSeq;
  } else if (j.is_string()) {
    e << YAML::DoubleQuoted << j.get<std::string>();
  } else if (j.is_boolean()) {
    e << j.get<bool>();
  } else if (j.is_number_integer()) {
    e << j.get<int64_t>();
  } else if (j.is_number_float()) {
    e << float_text(j.get<double>());
  } else {
    e << YAML::Null;
  }
}

void kv_json(YAML::Emitter& e, const char* k, const std::string& json_text) {
  e << Key << k << Value << YAML::Flow;
  json_value(e, json_text.empty() ? nlohmann::json::object() : nlohmann::json::parse(json_text));
}

void arg(YAML::Emitter& e, const algo::ArgValue& v) {
  std::visit(
      [&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::monostate>) e << YAML::Null;
        else if constexpr (std::is_same_v<X, std::string>) e << YAML::DoubleQuoted << x;
        else
          value(e, x);
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
  kv(e, "enable_thinking", f.enable_thinking);
  e << EndMap;
}

void selector(YAML::Emitter& e, const buffer::SelectorConfig& s) {
  e << Key << "data_selector" << Value << BeginMap;
  kv(e, "selector_type", s.selector_type);
  kv(e, "seed", s.seed);
  e << Key << "feature_keys" << Value << YAML::Flow << s.feature_keys;
  kv_json(e, "kwargs", s.kwargs);
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
  kv(e, "temperature", t.rollout_args.temperature);
  kv(e, "top_p", t.rollout_args.top_p);
  kv(e, "top_k", t.rollout_args.top_k);
  kv(e, "logprobs", t.rollout_args.logprobs);
  kv(e, "max_tokens", t.rollout_args.max_tokens);
  kv(e, "n", t.rollout_args.n);
  e << EndMap;
  kv_json(e, "workflow_args", t.workflow_args);
  kv_json(e, "reward_fn_args", t.reward_fn_args);
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
  kv(e, "total_steps", t.total_steps);
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
  kv(e, "reuse_cooldown_time", s.replay_buffer.reuse_cooldown_time);
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
  kv(e, "enable_thinking", m.enable_thinking);
  kv(e, "chat_template", m.chat_template);
  kv(e, "ignore_eos", m.ignore_eos);
  kv(e, "enable_history", m.enable_history);
  kv(e, "enable_openai_api", m.enable_openai_api);
  kv(e, "kv_cache_bytes", m.kv_cache_bytes);
  kv(e, "weight_dtype", m.weight_dtype);
  kv(e, "enable_prefix_caching", m.enable_prefix_caching);
  e << EndMap;
}

void algorithm(YAML::Emitter& e, const Config& c) {
  const algo::AlgorithmSpec& a = c.algorithm;
  e << Key << "algorithm" << Value << BeginMap;
  kv(e, "algorithm_type", a.algorithm_type);
  kv(e, "repeat_times", c.repeat_times);
  kv(e, "advantage_fn", a.advantage_fn);
  kv(e, "policy_loss_fn", a.policy_loss_fn);
  kv(e, "kl_penalty_fn", a.kl_penalty_fn);
  kv(e, "kl_loss_fn", a.kl_loss_fn);
  kv(e, "entropy_loss_fn", a.entropy_loss_fn);
  kv(e, "sample_strategy", a.sample_strategy);
  kv(e, "loss_agg_mode", a.loss_agg_mode);
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
  e << Key << "betas" << Value << YAML::Flow << BeginSeq;
  for (double b : o.betas) value(e, b);
  e << EndSeq;
  kv(e, "weight_decay", o.weight_decay);
  kv(e, "clip_grad", o.clip_grad);
  e << EndMap << EndMap;
}

}  // namespace

std::string to_yaml(const Config& c) {
  YAML::Emitter e;
  e.SetDoublePrecision(17);
  // Stages are summarised as comments: each stage's resolved config is its own to_yaml (the launcher
  // writes one per stage), so this text loads back as the config of the job without them.
  for (size_t i = 0; i < c.stages.size(); ++i) {
    const StageInfo& st = c.stages[i];
    std::string sections;
    for (const auto& sec : st.sections) sections += (sections.empty() ? "" : ", ") + sec;
    e << YAML::Comment(strcat("stage ", i, ": ", st.stage_name, " (mode ", st.mode.value_or(c.mode), "; replaces ",
                              sections.empty() ? "nothing" : sections, ")"))
      << YAML::Newline;
  }
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
  kv(e, "enable_thinking", m.enable_thinking);
  kv(e, "custom_chat_template", m.custom_chat_template);
  kv(e, "chat_template_path", m.chat_template_path);
  kv(e, "enable_prompt_truncation", m.enable_prompt_truncation);
  e << Key << "external_model" << Value << BeginMap;
  kv(e, "enable", m.external_model.enable);
  kv(e, "base_url_env", m.external_model.base_url_env);
  kv(e, "api_key_env", m.external_model.api_key_env);
  kv(e, "model_name", m.external_model.model_name);
  e << EndMap;
  if (m.lora) {
    const auto& l = *m.lora;
    e << Key << "lora_configs" << Value << BeginSeq << BeginMap;
    kv(e, "name", l.name);
    kv(e, "path", l.path);
    kv(e, "base_model_name", l.base_model_name);
    kv(e, "lora_rank", l.lora_rank);
    kv(e, "lora_alpha", l.lora_alpha);
    kv(e, "lora_dropout", l.lora_dropout);
    kv(e, "lora_dtype", l.lora_dtype);
    e << Key << "target_modules" << Value << YAML::Flow << l.target_modules;
    e << Key << "exclude_modules" << Value << YAML::Flow << l.exclude_modules;
    e << EndMap << EndSeq;
  }
  e << EndMap;
  const BufferConfig& b = c.buffer;
  e << Key << "buffer" << Value << BeginMap;
  kv(e, "batch_size", b.batch_size);
  kv(e, "train_batch_size", b.train_batch_size);
  kv(e, "total_epochs", b.total_epochs);
  kv(e, "total_steps", b.total_steps);
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
  kv_json(e, "workflow_args", b.explorer_input.workflow_args);
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
  kv(e, "threads", x.threads);
  kv(e, "max_timeout", x.max_timeout);
  kv(e, "max_retry_times", x.max_retry_times);
  e << Key << "env_vars" << Value << BeginMap;
  for (const auto& [k, v] : x.env_vars) kv(e, k.c_str(), v);
  e << EndMap;
  kv(e, "concurrent_mode", x.concurrent_mode);
  kv(e, "max_repeat_times_per_runner", x.max_repeat_times_per_runner);
  kv(e, "eval_interval", x.eval_interval);
  kv(e, "eval_on_startup", x.eval_on_startup);
  kv(e, "bench_on_latest_checkpoint", x.bench_on_latest_checkpoint);
  kv(e, "runner_state_report_interval", x.runner_state_report_interval);
  kv(e, "proxy_port", x.proxy_port);
  kv(e, "listen_address", x.listen_address);
  kv(e, "proxy_api_key", x.proxy_api_key);
  kv(e, "proxy_pending_ttl", x.proxy_pending_ttl);
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
  kv(e, "total_steps", t.total_steps);
  kv(e, "grad_clip", t.grad_clip);
  kv(e, "save_hf_checkpoint", t.save_hf_checkpoint);
  kv(e, "save_hf_dtype", t.save_hf_dtype);
  kv(e, "max_checkpoints_to_keep", t.max_checkpoints_to_keep);
  kv(e, "enable_preview", t.enable_preview);
  kv(e, "use_dynamic_bsz", t.use_dynamic_bsz);
  kv(e, "max_token_len_per_gpu", t.max_token_len_per_gpu);
  kv(e, "micro_batch_size", t.micro_batch_size);
  kv(e, "fix_actor_microbatch_loss_scale", t.fix_actor_microbatch_loss_scale);
  kv(e, "gradient_checkpointing", t.gradient_checkpointing);
  kv(e, "share_prompt_prefix", t.share_prompt_prefix);
  e << Key << "rollout_correction" << Value << BeginMap;
  kv(e, "bypass_mode", t.rollout_correction.bypass_mode);
  kv(e, "rollout_is", t.rollout_correction.rollout_is);
  kv(e, "rollout_is_threshold", t.rollout_correction.rollout_is_threshold);
  e << EndMap;
  e << Key << "critic" << Value << BeginMap;
  kv(e, "lr", t.critic.lr);
  kv(e, "cliprange_value", t.critic.cliprange_value);
  e << EndMap << EndMap;
  e << Key << "monitor" << Value << BeginMap;
  kv(e, "monitor_type", c.monitor.monitor_type);
  kv(e, "detailed_stats", c.monitor.detailed_stats);
  kv_json(e, "monitor_args", c.monitor.monitor_args);
  e << EndMap << Key << "log" << Value << BeginMap;
  kv(e, "level", c.log.level);
  e << EndMap;
  const auto& dp = c.data_processor;
  if (!dp.experience_operators.empty() || dp.task_pipeline) {
    auto ops = [&](const std::vector<DataProcessorConfig::Operator>& l) {
      e << Key << "operators" << Value << BeginSeq;
      for (const auto& o : l) {
        e << BeginMap;
        kv(e, "name", o.name);
        kv_json(e, "args", o.args);
        e << EndMap;
      }
      e << EndSeq;
    };
    e << Key << "data_processor" << Value << BeginMap;
    if (!dp.experience_operators.empty()) {
      e << Key << "experience_pipeline" << Value << BeginMap;
      ops(dp.experience_operators);
      e << EndMap;
    }
    if (const auto& tp = dp.task_pipeline) {
      e << Key << "task_pipeline" << Value << BeginMap;
      ops(tp->operators);
      kv(e, "num_process", tp->num_process);
      e << Key << "inputs" << Value << YAML::Flow << tp->inputs;
      kv(e, "output", tp->output);
      e << Key << "target_fields" << Value << YAML::Flow << tp->target_fields;
      kv_json(e, "priority_weights", tp->priority_weights);
      kv(e, "top_k", tp->top_k);
      e << EndMap;
    }
    e << EndMap;
  }
  e << EndMap;
  return std::string(e.c_str()) + "\n";
}

}  // namespace trinity::config
