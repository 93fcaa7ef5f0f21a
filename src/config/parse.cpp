// Tree -> Parsed: reads every section with Trinity-RFT's key names (trinity-rft.md §2), types checked,
// unknown keys rejected with a did-you-mean, Trinity keys that mean nothing here warned once each.
// No derivation happens here (derive.cpp does that), only "what did the user write".
#include <algorithm>
#include <set>

#include "config/section.h"
#include "core/error.h"

namespace trinity::config::detail {

namespace {

algo::ArgValue arg_value(const Tree& t) {
  if (t.is_null()) return algo::ArgValue();
  if (t.quoted) return algo::ArgValue(t.scalar);
  const std::string& s = t.scalar;
  if (s == "true" || s == "True" || s == "TRUE") return algo::ArgValue(true);
  if (s == "false" || s == "False" || s == "FALSE") return algo::ArgValue(false);
  char* end = nullptr;
  const long long i = std::strtoll(s.c_str(), &end, 10);
  if (!s.empty() && *end == '\0') return algo::ArgValue(static_cast<int64_t>(i));
  const double d = std::strtod(s.c_str(), &end);
  if (!s.empty() && *end == '\0') return algo::ArgValue(d);
  return algo::ArgValue(s);
}

void parse_optimizer(Ctx& c, const Tree& t, Parsed& p) {
  Section s(c, &t, "algorithm.optimizer");
  OptimizerConfig& o = p.cfg.optimizer;
  s.f64("lr", o.lr);
  s.i64("lr_warmup_steps", o.lr_warmup_steps);
  s.f64("lr_warmup_steps_ratio", o.lr_warmup_steps_ratio);
  s.f64("min_lr_ratio", o.min_lr_ratio);
  s.str("lr_scheduler_type", o.lr_scheduler_type);
  if (const Tree* w = s.get("warmup_style")) {
    c.warn(strcat(c.loc(*w), ": algorithm.optimizer.warmup_style is deprecated; use lr_scheduler_type"));
    if (!t.find("lr_scheduler_type") || t.find("lr_scheduler_type")->is_null())
      o.lr_scheduler_type = as_str(c, *w, s.at("warmup_style"));
  }
  s.str("optimizer_type", o.optimizer_type);
  if (const Tree* b = s.get("betas")) {
    if (!b->is_seq() || b->seq.size() != 2) c.fail(*b, "algorithm.optimizer.betas: expected a list of two numbers");
    o.betas = {as_f64(c, b->seq[0], "algorithm.optimizer.betas[0]"), as_f64(c, b->seq[1], "algorithm.optimizer.betas[1]")};
  }
  s.f64("weight_decay", o.weight_decay);
  s.f64("clip_grad", o.clip_grad);
  s.warn_ignored({"lr_warmup_init", "lr_decay_steps", "lr_decay_style", "min_lr", "weight_decay_incr_style",
                  "lr_wsd_decay_style", "lr_wsd_decay_steps", "use_checkpoint_opt_param_scheduler",
                  "optimizer_offload_fraction", "overlap_cpu_optimizer_d2h_h2d", "use_precision_aware_optimizer",
                  "optimizer_cpu_offload", "total_training_steps"},
                 "Megatron / verl optimizer option");
  s.finish();
}

// AlgorithmSpec::optimizer mirrors the resolved optimizer scalars (not the text the user wrote, so a
// config and its to_yaml resolve to the same spec).
void mirror_optimizer(Parsed& p) {
  const OptimizerConfig& o = p.cfg.optimizer;
  p.cfg.algorithm.optimizer = {{"lr", o.lr},
                               {"lr_warmup_steps", o.lr_warmup_steps},
                               {"lr_warmup_steps_ratio", o.lr_warmup_steps_ratio},
                               {"min_lr_ratio", o.min_lr_ratio},
                               {"lr_scheduler_type", o.lr_scheduler_type},
                               {"optimizer_type", o.optimizer_type},
                               {"weight_decay", o.weight_decay},
                               {"clip_grad", o.clip_grad}};
}

void parse_algorithm(Ctx& c, const Tree* t, Parsed& p) {
  Section s(c, t, "algorithm");
  if (!s.node()) return;
  for (const auto& [k, v] : s.node()->map) {
    const std::string path = "algorithm." + k;
    try {
      if (k == "optimizer") {
        if (!v.is_null()) parse_optimizer(c, v, p);
        continue;
      }
      const auto& mk = algo::AlgorithmSpec::map_keys();
      const bool map_key = std::find(mk.begin(), mk.end(), k) != mk.end();
      if (v.is_map()) {
        algo::ArgMap m;
        for (const auto& [ak, av] : v.map) {
          if (av.is_map() || av.is_seq())
            c.fail(av, strcat(path, ".", ak, ": expected a scalar (null, bool, number or string), got ", av.short_repr()));
          m[ak] = arg_value(av);
        }
        p.cfg.algorithm.set_map(k, m);
      } else if (v.is_null() && map_key) {
        continue;  // `policy_loss_fn_args: null` = defaults
      } else if (v.is_seq()) {
        c.fail(v, strcat(path, ": expected a scalar or a mapping, got a list"));
      } else {
        p.cfg.algorithm.set(k, arg_value(v));
      }
    } catch (const ConfigError& e) {
      if (e.component() != "algorithm") throw;
      std::string msg = e.what();
      msg = msg.substr(msg.find("] ") + 2);
      if (msg.find("unknown") != std::string::npos || msg.find("must be") != std::string::npos) {
        std::vector<std::string> keys = algo::AlgorithmSpec::scalar_keys();
        keys.insert(keys.end(), algo::AlgorithmSpec::map_keys().begin(), algo::AlgorithmSpec::map_keys().end());
        const std::string hint = did_you_mean(k, keys);
        if (msg.find("did you mean") == std::string::npos && !hint.empty() && msg.find("unknown") != std::string::npos)
          msg += "; " + hint;
      }
      throw ConfigError("config", strcat(c.loc(v), ": ", msg));
    }
  }
}

// A scalar or a list of scalars.
std::vector<std::string> str_list(Ctx& c, const Tree& t, const std::string& path) {
  std::vector<std::string> out;
  if (t.is_scalar()) return {as_str(c, t, path)};
  if (!t.is_seq()) c.fail(t, strcat(path, ": expected a module name or a list of them, got ", t.short_repr()));
  for (size_t i = 0; i < t.seq.size(); ++i) out.push_back(as_str(c, t.seq[i], strcat(path, "[", i, "]")));
  return out;
}

void parse_lora(Ctx& c, const Tree& l, ModelConfig& m) {
  if (!l.is_seq()) c.fail(l, strcat("model.lora_configs: expected a list, got ", l.short_repr()));
  if (l.seq.empty()) return;
  if (l.seq.size() > 1)
    c.fail(l, strcat("model.lora_configs: at most one LoRA adapter is supported (as Trinity-RFT), got ", l.seq.size()));
  Section s(c, &l.seq[0], "model.lora_configs[0]");
  ModelConfig::Lora r;
  s.str("name", r.name);
  s.str("path", r.path);
  s.str("base_model_name", r.base_model_name);
  s.i64("lora_rank", r.lora_rank);
  s.f64("lora_alpha", r.lora_alpha);
  s.f64("lora_dropout", r.lora_dropout);
  s.str("lora_dtype", r.lora_dtype);
  if (const Tree* t = s.get("target_modules")) r.target_modules = str_list(c, *t, s.at("target_modules"));
  if (const Tree* t = s.get("exclude_modules")) r.exclude_modules = str_list(c, *t, s.at("exclude_modules"));
  if (r.lora_rank < 1) c.fail(l.seq[0], strcat(s.at("lora_rank"), ": must be >= 1, got ", r.lora_rank));
  if (!(r.lora_alpha > 0)) c.fail(l.seq[0], strcat(s.at("lora_alpha"), ": must be > 0, got ", r.lora_alpha));
  if (!(r.lora_dropout >= 0 && r.lora_dropout < 1))
    c.fail(l.seq[0], strcat(s.at("lora_dropout"), ": must be in [0, 1), got ", r.lora_dropout));
  if (r.lora_dtype != "auto" && r.lora_dtype != "float32")
    c.fail(l.seq[0], strcat(s.at("lora_dtype"), ": '", r.lora_dtype,
                            "' is not supported (adapters train in float32: auto or float32)"));
  static const std::set<std::string> kModules = {"all-linear", "all_linear", "q_proj",  "k_proj",   "v_proj",
                                                 "o_proj",     "gate_proj",  "up_proj", "down_proj"};
  for (const auto* list : {&r.target_modules, &r.exclude_modules})
    for (const auto& mod : *list)
      if (!kModules.count(mod))
        c.fail(l.seq[0], strcat("model.lora_configs[0]: unknown module '", mod,
                                "' (expected all-linear or q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, "
                                "down_proj)"));
  s.finish();
  m.lora = r;
}

void parse_model(Ctx& c, const Tree* t, Parsed& p) {
  Section s(c, t, "model");
  ModelConfig& m = p.cfg.model;
  s.str("model_path", m.model_path);
  p.critic_model_path_set = s.get("critic_model_path") != nullptr;
  s.str("critic_model_path", m.critic_model_path);
  s.opt("max_model_len", p.max_model_len);
  s.opt("max_prompt_tokens", p.max_prompt_tokens);
  s.opt("max_response_tokens", p.max_response_tokens);
  s.i64("min_response_tokens", m.min_response_tokens);
  s.f64("temperature", m.temperature);
  s.f64("top_p", m.top_p);
  s.i64("top_k", m.top_k);
  s.i64("logprobs", m.logprobs);
  s.f64("repetition_penalty", m.repetition_penalty);
  s.opt("enable_thinking", m.enable_thinking);
  s.str("custom_chat_template", m.custom_chat_template);
  s.str("chat_template_path", m.chat_template_path);
  s.boolean("enable_prompt_truncation", m.enable_prompt_truncation);
  if (const Tree* l = s.get("lora_configs")) parse_lora(c, *l, m);
  if (const Tree* em = s.get("external_model")) {
    Section es(c, em, "model.external_model");
    es.boolean("enable", m.external_model.enable);
    es.str("base_url_env", m.external_model.base_url_env);
    es.str("api_key_env", m.external_model.api_key_env);
    es.str("model_name", m.external_model.model_name);
    es.finish();
  }
  s.warn_ignored({"trust_remote_code", "fully_sharded_loras", "max_cpu_loras", "rope_scaling", "rope_theta", "tinker"});
  s.finish();
}

void parse_inference(Ctx& c, const Tree* t, const std::string& path, InferenceModelConfig& m, Sampling& smp,
                     bool auxiliary) {
  Section s(c, t, path);
  s.str("name", m.name);
  if (auxiliary) s.str("model_path", m.model_path);
  s.i64("engine_num", m.engine_num);
  s.i64("seed", m.seed);
  s.opt("temperature", smp.temperature);
  s.opt("top_p", smp.top_p);
  s.opt("top_k", smp.top_k);
  s.opt("logprobs", smp.logprobs);
  s.opt("repetition_penalty", smp.repetition_penalty);
  s.opt("max_model_len", smp.max_model_len);
  s.opt("max_prompt_tokens", smp.max_prompt_tokens);
  s.opt("max_response_tokens", smp.max_response_tokens);
  s.opt("min_response_tokens", smp.min_response_tokens);
  s.opt("enable_prompt_truncation", smp.enable_prompt_truncation);
  s.opt("enable_thinking", m.enable_thinking);
  s.str("chat_template", m.chat_template);
  s.boolean("ignore_eos", m.ignore_eos);
  s.boolean("enable_history", m.enable_history);
  s.boolean("enable_openai_api", m.enable_openai_api);
  s.i64("kv_cache_bytes", m.kv_cache_bytes);
  s.str("weight_dtype", m.weight_dtype);
  if (m.weight_dtype != "float32" && m.weight_dtype != "bfloat16")
    c.fail(*s.get("weight_dtype"),
           strcat(s.at("weight_dtype"), ": '", m.weight_dtype, "' is not one of float32, bfloat16"));
  s.boolean("enable_prefix_caching", m.enable_prefix_caching);
  s.warn_ignored({"engine_type",
                  "tensor_parallel_size",
                  "use_v1",
                  "enforce_eager",
                  "enable_chunked_prefill",
                  "gpu_memory_utilization",
                  "dtype",
                  "enable_log_requests",
                  "enable_auto_tool_choice",
                  "tool_call_parser",
                  "reasoning_parser",
                  "rope_scaling",
                  "rope_theta",
                  "bundle_indices",
                  "cuda_visible_devices",
                  "enable_lora",
                  "lora_modules",
                  "lora_kwargs",
                  "max_num_seqs",
                  "max_num_batched_tokens",
                  "enable_sleep_mode",
                  "trust_remote_code"},
                 "vLLM engine option");
  s.finish();
}

void parse_explorer(Ctx& c, const Tree* t, Parsed& p) {
  Section s(c, t, "explorer");
  ExplorerConfig& e = p.cfg.explorer;
  s.str("name", e.name);
  s.i64("runner_per_model", e.runner_per_model);
  s.i64("threads", e.threads);
  s.f64("max_timeout", e.max_timeout);
  s.i64("max_retry_times", e.max_retry_times);
  if (const Tree* ev = s.get("env_vars")) {
    Section es(c, ev, "explorer.env_vars");
    for (const auto& [k, v] : ev->map) e.env_vars[k] = as_str(c, v, es.at(k));
  }
  s.str("concurrent_mode", e.concurrent_mode);
  s.opt("max_repeat_times_per_runner", e.max_repeat_times_per_runner);
  parse_inference(c, s.get("rollout_model"), "explorer.rollout_model", e.rollout_model, p.rollout, false);
  if (const Tree* aux = s.get("auxiliary_models")) {
    if (!aux->is_seq()) c.fail(*aux, strcat("explorer.auxiliary_models: expected a list, got ", aux->short_repr()));
    for (size_t i = 0; i < aux->seq.size(); ++i) {
      e.auxiliary_models.emplace_back();
      p.aux.emplace_back();
      parse_inference(c, &aux->seq[i], strcat("explorer.auxiliary_models[", i, "]"), e.auxiliary_models.back(),
                      p.aux.back(), true);
    }
  }
  s.i64("eval_interval", e.eval_interval);
  s.boolean("eval_on_startup", e.eval_on_startup);
  s.boolean("bench_on_latest_checkpoint", e.bench_on_latest_checkpoint);
  s.i64("proxy_port", e.proxy_port);
  s.str("listen_address", e.listen_address);
  s.str("proxy_api_key", e.proxy_api_key);
  s.f64("proxy_pending_ttl", e.proxy_pending_ttl);
  if (const Tree* dt = s.get("dynamic_timeout")) {
    Section ds(c, dt, "explorer.dynamic_timeout");
    ds.boolean("enable", e.dynamic_timeout.enable);
    ds.f64("ratio", e.dynamic_timeout.ratio);
    ds.finish();
  }
  s.f64("runner_state_report_interval", e.runner_state_report_interval);
  s.warn_ignored({"service_status_check_interval", "min_running_model_num", "db_url", "over_rollout"});
  s.finish();
}

void parse_synchronizer(Ctx& c, const Tree* t, Parsed& p) {
  Section s(c, t, "synchronizer");
  SynchronizerConfig& y = p.cfg.synchronizer;
  s.opt("sync_method", p.sync_method);
  s.str("sync_style", y.sync_style);
  s.i64("sync_interval", y.sync_interval);
  s.i64("sync_offset", y.sync_offset);
  s.f64("sync_timeout", y.sync_timeout);
  s.warn_ignored({"wait_for_checkpoint", "explorer_world_size"});
  s.finish();
}

void parse_trainer(Ctx& c, const Tree* t, Parsed& p) {
  Section s(c, t, "trainer");
  TrainerConfig& r = p.cfg.trainer;
  s.str("name", r.name);
  s.i64("save_interval", r.save_interval);
  s.opt("total_steps", r.total_steps);
  s.f64("grad_clip", r.grad_clip);
  s.str("save_hf_checkpoint", r.save_hf_checkpoint);
  s.str("save_hf_dtype", r.save_hf_dtype);
  s.opt("max_checkpoints_to_keep", r.max_checkpoints_to_keep);
  s.boolean("enable_preview", r.enable_preview);
  s.boolean("use_dynamic_bsz", r.use_dynamic_bsz);
  s.opt("max_token_len_per_gpu", p.max_token_len_per_gpu);
  s.i64("ppo_micro_batch_size_per_gpu", r.micro_batch_size);
  s.i64("micro_batch_size", r.micro_batch_size);
  s.boolean("fix_actor_microbatch_loss_scale", r.fix_actor_microbatch_loss_scale);
  s.boolean("gradient_checkpointing", r.gradient_checkpointing);
  s.boolean("share_prompt_prefix", r.share_prompt_prefix);
  if (const Tree* rc = s.get("rollout_correction")) {
    Section rs(c, rc, "trainer.rollout_correction");
    rs.boolean("bypass_mode", r.rollout_correction.bypass_mode);
    rs.str("rollout_is", r.rollout_correction.rollout_is);
    rs.f64("rollout_is_threshold", r.rollout_correction.rollout_is_threshold);
    const std::string& is = r.rollout_correction.rollout_is;
    if (!is.empty() && is != "token" && is != "sequence")
      c.fail(*rc, strcat("trainer.rollout_correction.rollout_is: '", is, "' is not one of token, sequence, null"));
    if (!(r.rollout_correction.rollout_is_threshold > 0))
      c.fail(*rc, strcat("trainer.rollout_correction.rollout_is_threshold: must be > 0, got ",
                         r.rollout_correction.rollout_is_threshold));
    rs.finish();
  }
  if (const Tree* cr = s.get("critic")) {
    Section cs(c, cr, "trainer.critic");
    cs.f64("lr", r.critic.lr);
    cs.f64("cliprange_value", r.critic.cliprange_value);
    cs.finish();
  }
  if (const Tree* tp = s.get("trainer_config_path"))
    c.fail(*tp, "trainer.trainer_config_path is deprecated in Trinity-RFT and not supported; set the trainer.* keys");
  s.get("trainer_config");  // mapped by map_trainer_config (verl_keys.cpp)
  s.warn_ignored({"trainer_type", "trainer_strategy", "ulysses_sequence_parallel_size", "save_strategy"});
  s.finish();
}

void parse_monitor_log(Ctx& c, const Tree* mon, const Tree* log, Parsed& p) {
  Section s(c, mon, "monitor");
  s.str("monitor_type", p.cfg.monitor.monitor_type);
  s.boolean("detailed_stats", p.cfg.monitor.detailed_stats);
  if (const Tree* a = s.get("monitor_args")) {
    if (!a->is_map()) c.fail(*a, strcat("monitor.monitor_args: expected a mapping, got ", a->short_repr()));
    p.cfg.monitor.monitor_args = tree_to_json_text(*a);
  }
  s.warn_ignored({"enable_ray_timeline"});
  s.finish();
  Section l(c, log, "log");
  l.str("level", p.cfg.log.level);
  l.warn_ignored({"group_by_node"});
  l.finish();
}

void parse_stages(Ctx& c, const Tree* t, Parsed& p) {
  if (!t) return;
  if (!t->is_seq()) c.fail(*t, strcat("stages: expected a list, got ", t->short_repr()));
  std::vector<std::string> names;
  for (size_t i = 0; i < t->seq.size(); ++i) {
    Section s(c, &t->seq[i], strcat("stages[", i, "]"));
    StageInfo st;
    s.str("stage_name", st.stage_name);
    s.opt("mode", st.mode);
    for (const char* sec : {"algorithm", "buffer", "explorer", "trainer", "data_processor"})
      if (const Tree* v = s.get(sec)) {
        if (!v->is_map()) c.fail(*v, strcat(s.at(sec), ": expected a mapping, got ", v->short_repr()));
        st.sections.push_back(sec);
      }
    s.finish();
    if (st.stage_name.empty()) c.fail(t->seq[i], strcat("stages[", i, "].stage_name is required"));
    if (const std::string why = job_dir_name_problem(st.stage_name); !why.empty())
      c.fail(*t->seq[i].find("stage_name"), strcat("stages[", i, "].stage_name: '", st.stage_name, "' ", why,
                                                   " (a stage runs in <job dir>/<stage_name>)"));
    if (std::find(names.begin(), names.end(), st.stage_name) != names.end())
      c.fail(t->seq[i], strcat("stages[", i, "].stage_name '", st.stage_name, "' is used twice"));
    names.push_back(st.stage_name);
    p.cfg.stages.push_back(std::move(st));
  }
}

// A list of {name, args} operators at `at`.
std::vector<DataProcessorConfig::Operator> parse_operators(Ctx& c, const Tree* ops, const std::string& at0) {
  std::vector<DataProcessorConfig::Operator> out;
  if (!ops) return out;
  if (!ops->is_seq()) c.fail(*ops, strcat(at0, ": expected a list of {name, args}, got ", ops->short_repr()));
  for (size_t i = 0; i < ops->seq.size(); ++i) {
    const std::string at = strcat(at0, "[", i, "]");
    Section os(c, &ops->seq[i], at);
    DataProcessorConfig::Operator o;
    os.str("name", o.name);
    if (o.name.empty()) c.fail(ops->seq[i], strcat(at, ".name is required"));
    if (const Tree* a = os.get("args")) {
      if (!a->is_map()) c.fail(*a, strcat(at, ".args: expected a mapping, got ", a->short_repr()));
      o.args = tree_to_json_text(*a);
    }
    os.finish();
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<std::string> parse_strings(Ctx& c, const Tree* t, const std::string& at) {
  std::vector<std::string> out;
  if (!t) return out;
  if (t->is_scalar()) return {as_str(c, *t, at)};
  if (!t->is_seq()) c.fail(*t, strcat(at, ": expected a list of strings, got ", t->short_repr()));
  for (size_t i = 0; i < t->seq.size(); ++i) out.push_back(as_str(c, t->seq[i], strcat(at, "[", i, "]")));
  return out;
}

// data_processor: the experience pipeline's operators [{name, args}] (the launcher makes them, so an
// unknown operator fails before the run) and the task pipeline; the experience pipeline's
// save/inputs/output keys are warned.
void parse_data_processor(Ctx& c, const Tree* t, Parsed& p) {
  if (!t) return;
  Section s(c, t, "data_processor");
  if (const Tree* ep = s.get("experience_pipeline")) {
    Section es(c, ep, "data_processor.experience_pipeline");
    p.cfg.data_processor.experience_operators =
        parse_operators(c, es.get("operators"), "data_processor.experience_pipeline.operators");
    es.warn_ignored({"save_input", "input_save_path", "inputs", "output"},
                    "the raw explorer output is not saved separately; experiences go to the experience buffer");
    es.finish();
  }
  if (const Tree* tp = s.get("task_pipeline")) {
    const std::string at = "data_processor.task_pipeline";
    Section ts(c, tp, at);
    DataProcessorConfig::TaskPipeline x;
    x.operators = parse_operators(c, ts.get("operators"), at + ".operators");
    ts.i64("num_process", x.num_process);
    if (x.num_process < 1) c.fail(*ts.get("num_process"), strcat(at, ".num_process must be >= 1, got ", x.num_process));
    if (const Tree* cp = ts.get("config_path"))
      c.fail(*cp, strcat(at, ".config_path is a Data-Juicer recipe, which trinity does not run in-process; run ",
                         "dj-process through the 'command' operator (docs/data.md: plugging Data-Juicer)"));
    x.inputs = parse_strings(c, ts.get("inputs"), at + ".inputs");
    for (auto& in : x.inputs) in = resolve_path(in, c.dir, false);
    if (const Tree* o = ts.get("output")) {
      if (o->is_scalar()) {
        x.output = as_str(c, *o, at + ".output");
      } else {
        Section os(c, o, at + ".output");
        os.str("path", x.output);
        os.warn_ignored({"name", "storage_type", "split", "format", "subset_name"},
                        "the task pipeline writes <path>/output.jsonl");
        os.finish();
      }
      x.output = resolve_path(x.output, c.dir, false);
    }
    x.target_fields = parse_strings(c, ts.get("target_fields"), at + ".target_fields");
    if (const Tree* w = ts.get("priority_weights")) {
      Section ws(c, w, at + ".priority_weights");
      for (const char* k : {"difficulty", "diversity", "usage_frequency", "quality"}) {
        std::optional<double> v;
        ws.opt(k, v);  // checks the type
      }
      ws.finish();
      if (w->is_map()) x.priority_weights = tree_to_json_text(*w);
    }
    ts.i64("top_k", x.top_k);
    if (x.top_k < -1 || x.top_k == 0)
      c.fail(*ts.get("top_k"), strcat(at, ".top_k must be -1 (all) or > 0, got ", x.top_k));
    ts.finish();
    p.cfg.data_processor.task_pipeline = std::move(x);
  }
  s.finish();
}

void warn_section(Ctx& c, const Tree* t, const std::string& name, const std::string& why) {
  if (!t || t->is_null() || (t->is_map() && t->map.empty())) return;
  c.warn(strcat(c.loc(*t), ": ", name, " ", why));
}

}  // namespace

Parsed parse_tree(Ctx& c, const Tree& root) {
  Parsed p;
  Section s(c, &root, "");
  Config& cfg = p.cfg;
  s.str("mode", cfg.mode);
  s.str("project", cfg.project);
  s.str("group", cfg.group);
  s.str("name", cfg.name);
  s.str("checkpoint_root_dir", cfg.checkpoint_root_dir);
  s.get("checkpoint_job_dir");  // Trinity's derived job dir (configs it dumped carry it): checked in derive()
  s.boolean("continue_from_checkpoint", cfg.continue_from_checkpoint);
  s.warn_ignored({"ray_namespace", "ignore_validator_suggestions"});
  parse_algorithm(c, s.get("algorithm"), p);
  mirror_optimizer(p);
  parse_model(c, s.get("model"), p);
  parse_buffer(c, s.get("buffer"), p);
  parse_explorer(c, s.get("explorer"), p);
  parse_synchronizer(c, s.get("synchronizer"), p);
  parse_trainer(c, s.get("trainer"), p);
  map_trainer_config(c, root, p);
  mirror_optimizer(p);  // trainer_config may set the optimizer's lr / weight_decay
  parse_monitor_log(c, s.get("monitor"), s.get("log"), p);
  if (const Tree* cl = s.get("cluster")) {
    Section cs(c, cl, "cluster");
    cs.warn_ignored({"ray_address", "node_num", "gpu_per_node"}, "trinity runs in one process per role; no Ray cluster");
    cs.finish();
  }
  parse_data_processor(c, s.get("data_processor"), p);
  warn_section(c, s.get("service"), "service", "(Data-Juicer service) is not implemented in trinity; ignored");
  parse_stages(c, s.get("stages"), p);
  s.finish();
  return p;
}

}  // namespace trinity::config::detail
