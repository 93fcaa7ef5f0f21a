// Trinity-RFT's validators (Config.check_and_update, trinity-rft.md §2) for what trinity implements:
// mode, algorithm preset resolution, model length split (§2.3), taskset/buffer auto fields (§2.5),
// rollout model inheritance (§2.6), sync method per mode (§2.7), trainer token budget (§2.8), range
// checks. Differences from Trinity are warnings (nccl -> memory, wandb -> jsonl, engine_num -> 1).
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "algorithm/algorithm.h"
#include "buffer/pg_storage.h"
#include "buffer/storage.h"
#include "config/section.h"
#include "core/error.h"
#include "core/file.h"
#include "core/json_limits.h"

namespace trinity::config::detail {

namespace {

const Tree& at_or(const Tree& root, const std::string& path) {
  const Tree* t = tree_at(root, path);
  return t ? *t : root;
}

[[noreturn]] void bad(const Ctx& c, const Tree& root, const std::string& path, const std::string& msg) {
  c.fail(at_or(root, path), strcat(path, ": ", msg));
}

void check_choice(const Ctx& c, const Tree& root, const std::string& path, const std::string& v,
                  const std::vector<std::string>& choices) {
  if (std::find(choices.begin(), choices.end(), v) == choices.end())
    bad(c, root, path, strcat("'", v, "' is not one of ", algo::join_names(choices)));
}

void positive(const Ctx& c, const Tree& root, const std::string& path, double v, bool allow_zero = false) {
  if (allow_zero ? v < 0 : v <= 0) bad(c, root, path, strcat("must be ", allow_zero ? ">= 0" : "> 0", ", got ", v));
}

// The model's max_position_embeddings from <dir>/config.json; nullopt when there is no readable one
// (a hub name, a path on another machine: the loader checks it at run time).
std::optional<int64_t> model_max_positions(const std::string& dir) {
  const std::string path = file::join(dir, "config.json");
  std::error_code ec;
  if (dir.empty() || !std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  try {
    const std::string text = file::read_all(path);
    if (json_depth(text) > kMaxJsonDepth) return std::nullopt;
    const auto j = nlohmann::json::parse(text);
    if (!j.is_object() || !j.contains("max_position_embeddings") || !j["max_position_embeddings"].is_number_integer())
      return std::nullopt;
    return j["max_position_embeddings"].get<int64_t>();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// A context length (`key`, value `len`) for the model at `model_dir`: at most kMaxModelLen and at most
// the model's max_position_embeddings (as vLLM refuses a max_model_len above the model's).
void check_model_len(const Ctx& c, const Tree& root, const std::string& key, int64_t len, const std::string& model_dir,
                     const std::string& what = "") {
  const std::string name = what.empty() ? "" : what + " ";
  if (len > kMaxModelLen)
    bad(c, root, key, strcat(name, len, " is above trinity's limit of ", kMaxModelLen, " tokens"));
  if (const auto mpe = model_max_positions(model_dir); mpe && len > *mpe)
    bad(c, root, key,
        strcat(name, len, " exceeds the model's max_position_embeddings ", *mpe, " (",
               file::join(model_dir, "config.json"), ")"));
}

// A sampling temperature at `key`: negative is an error; below kGreedyTemperature the engine samples
// greedily (as at 0) and the trainer computes logprobs at temperature 1, which is said once.
void check_temperature(Ctx& c, const Tree& root, const std::string& key, double t) {
  if (!(t >= 0)) bad(c, root, key, strcat("must be >= 0 (0 = greedy), got ", t));
  if (t > 0 && t < kGreedyTemperature)
    c.warn(strcat(c.loc(at_or(root, key)), ": ", key, ": ", t, " is below ", kGreedyTemperature,
                  ": sampling is greedy, as with temperature 0 (logprobs are those at temperature 1)"));
}

void derive_model(Ctx& c, const Tree& root, Parsed& p) {
  ModelConfig& m = p.cfg.model;
  const ModelConfig::ExternalModel& em = m.external_model;
  if (em.enable && p.cfg.mode != "bench")
    bad(c, root, "model.external_model.enable",
        strcat("an external model is bench-mode only (mode: bench or `trinity bench`), but mode is '", p.cfg.mode,
               "'"));
  if (em.enable && em.base_url_env.empty())
    bad(c, root, "model.external_model.base_url_env",
        "must name the environment variable that holds the API's base URL");
  if (em.enable && em.api_key_env.empty())
    bad(c, root, "model.external_model.api_key_env", "must name the environment variable that holds the API key");
  if (m.model_path.empty() && em.enable && em.model_name.empty())
    bad(c, root, "model.external_model.model_name",
        "is required when model.model_path is empty (the model name sent to the external API)");
  if (m.model_path.empty() && p.cfg.mode != "serve" && !em.enable)
    bad(c, root, "model.model_path", "is required (a Hugging Face model directory)");
  m.model_path = resolve_path(m.model_path, c.dir, true);
  m.critic_model_path = p.critic_model_path_set ? resolve_path(m.critic_model_path, c.dir, true) : m.model_path;
  if (m.lora && !m.lora->path.empty()) m.lora->path = resolve_path(m.lora->path, c.dir, true);
  auto prompt = p.max_prompt_tokens, response = p.max_response_tokens;
  int64_t len = 0;
  if (prompt && *prompt > kMaxModelLen)
    bad(c, root, "model.max_prompt_tokens", strcat(*prompt, " is above trinity's limit of ", kMaxModelLen, " tokens"));
  if (response && *response > kMaxModelLen)
    bad(c, root, "model.max_response_tokens",
        strcat(*response, " is above trinity's limit of ", kMaxModelLen, " tokens"));
  if (p.max_model_len) {
    len = *p.max_model_len;
    check_model_len(c, root, "model.max_model_len", len, m.model_path);
  } else if (prompt && response) {
    len = *prompt + *response;
    check_model_len(c, root, "model.max_response_tokens", len, m.model_path,
                    "max_model_len (max_prompt_tokens + max_response_tokens)");
  } else {
    bad(c, root, "model", "max_model_len is required unless both max_prompt_tokens and max_response_tokens are set");
  }
  positive(c, root, "model.max_model_len", static_cast<double>(len));
  if (!prompt && !response) {
    prompt = len / 2;
    response = len - *prompt;
  } else if (!response) {
    if (*prompt >= len) {
      c.warn(strcat("model.max_prompt_tokens (", *prompt, ") >= max_model_len (", len, "); using ", len - 1));
      prompt = len - 1;
    }
    response = len - *prompt;
  } else if (!prompt) {
    if (*response >= len) {
      c.warn(strcat("model.max_response_tokens (", *response, ") >= max_model_len (", len, "); using ", len - 1));
      response = len - 1;
    }
    prompt = len - *response;
  }
  positive(c, root, "model.max_prompt_tokens", static_cast<double>(*prompt));
  positive(c, root, "model.max_response_tokens", static_cast<double>(*response));
  if (*prompt + *response > len)
    bad(c, root, "model",
        strcat("max_prompt_tokens (", *prompt, ") + max_response_tokens (", *response, ") = ", *prompt + *response,
               " exceeds max_model_len (", len, ")"));
  m.max_model_len = len;
  m.max_prompt_tokens = *prompt;
  m.max_response_tokens = *response;
  positive(c, root, "model.min_response_tokens", static_cast<double>(m.min_response_tokens), true);
  if (m.min_response_tokens >= m.max_response_tokens) {
    c.warn(strcat("model.min_response_tokens (", m.min_response_tokens, ") >= max_response_tokens; using ",
                  m.max_response_tokens - 1));
    m.min_response_tokens = m.max_response_tokens - 1;
  }
  check_temperature(c, root, "model.temperature", m.temperature);
  if (m.top_p <= 0 || m.top_p > 1) bad(c, root, "model.top_p", strcat("must be in (0, 1], got ", m.top_p));
  positive(c, root, "model.repetition_penalty", m.repetition_penalty);
  if (!m.chat_template_path.empty()) {
    m.chat_template_path = resolve_path(m.chat_template_path, c.dir, false);
    m.custom_chat_template = file::read_all(m.chat_template_path);
  }
}

void inherit(InferenceModelConfig& r, const Sampling& s, const ModelConfig& m) {
  r.temperature = s.temperature.value_or(m.temperature);
  r.top_p = s.top_p.value_or(m.top_p);
  r.top_k = s.top_k.value_or(m.top_k);
  r.logprobs = s.logprobs.value_or(m.logprobs);
  r.repetition_penalty = s.repetition_penalty.value_or(m.repetition_penalty);
  r.max_model_len = s.max_model_len.value_or(m.max_model_len);
  r.max_prompt_tokens = s.max_prompt_tokens.value_or(m.max_prompt_tokens);
  r.max_response_tokens = s.max_response_tokens.value_or(m.max_response_tokens);
  r.min_response_tokens = s.min_response_tokens.value_or(m.min_response_tokens);
  r.enable_prompt_truncation = s.enable_prompt_truncation.value_or(m.enable_prompt_truncation);
}

// buffer.explorer_input.workflow_args under a taskset's own (its keys win); both JSON object text.
std::string merged_workflow_args(const std::string& defaults, const std::string& own) {
  nlohmann::json d = nlohmann::json::parse(defaults.empty() ? "{}" : defaults);
  if (d.empty()) return own;
  const nlohmann::json o = nlohmann::json::parse(own.empty() ? "{}" : own);
  for (const auto& [k, v] : o.items()) d[k] = v;
  return d.dump();
}

void fill_taskset(buffer::TasksetConfig& t, const Config& cfg, const std::string& dir) {
  const ModelConfig& m = cfg.model;
  t.batch_size = cfg.buffer.batch_size;
  t.total_epochs = cfg.buffer.total_epochs;
  t.total_steps = cfg.buffer.total_steps;
  if (!t.rollout_args.temperature) t.rollout_args.temperature = m.temperature;
  if (!t.rollout_args.top_p) t.rollout_args.top_p = m.top_p;
  if (!t.rollout_args.top_k) t.rollout_args.top_k = m.top_k;
  if (!t.rollout_args.logprobs) t.rollout_args.logprobs = m.logprobs;
  if (!t.rollout_args.max_tokens) t.rollout_args.max_tokens = m.max_response_tokens;
  if (t.default_reward_fn_type.empty()) t.default_reward_fn_type = cfg.buffer.explorer_input.default_reward_fn_type;
  t.path = resolve_path(t.path, dir, true);
}

std::string storage_path(const std::string& path, const std::string& dir) {
  if (buffer::is_postgres_url(path)) return path;  // a server, not a file
  if (path.rfind("sqlite:///", 0) == 0) {
    const std::string rest = path.substr(10);
    return rest.empty() || rest[0] == '/' ? path : "sqlite:///" + resolve_path(rest, dir, false);
  }
  return resolve_path(path, dir, false);
}

// A taskset's rollout_args (filled from model.* by fill_taskset) and repeat count at `path`.
void check_taskset(Ctx& c, const Tree& root, const std::string& path, const buffer::TasksetConfig& t,
                   const ModelConfig& m) {
  const auto& ra = t.rollout_args;
  if (tree_at(root, path + ".rollout_args.temperature"))
    check_temperature(c, root, path + ".rollout_args.temperature", *ra.temperature);
  if (ra.max_tokens && (*ra.max_tokens <= 0 || *ra.max_tokens > m.max_model_len))
    bad(c, root, path + ".rollout_args.max_tokens",
        strcat("must be in [1, model.max_model_len = ", m.max_model_len, "], got ", *ra.max_tokens));
  if (ra.top_p && (*ra.top_p <= 0 || *ra.top_p > 1))
    bad(c, root, path + ".rollout_args.top_p", strcat("must be in (0, 1], got ", *ra.top_p));
  if (ra.n && (*ra.n <= 0 || *ra.n > kMaxRepeatTimes))
    bad(c, root, path + ".rollout_args.n", strcat("must be in [1, ", kMaxRepeatTimes, "], got ", *ra.n));
  if (t.repeat_times <= 0 || t.repeat_times > kMaxRepeatTimes)
    bad(c, root, path + ".repeat_times", strcat("must be in [1, ", kMaxRepeatTimes, "], got ", t.repeat_times));
}

void derive_buffer(Ctx& c, const Tree& root, Parsed& p) {
  Config& cfg = p.cfg;
  BufferConfig& b = cfg.buffer;
  positive(c, root, "buffer.batch_size", static_cast<double>(b.batch_size));
  positive(c, root, "buffer.total_epochs", static_cast<double>(b.total_epochs));
  if (b.total_steps) positive(c, root, "buffer.total_steps", static_cast<double>(*b.total_steps));
  const bool offline = cfg.schema_type != "experience";
  if (p.train_batch_size) {
    b.train_batch_size = *p.train_batch_size;
    positive(c, root, "buffer.train_batch_size", static_cast<double>(b.train_batch_size));
  } else if (offline) {
    bad(c, root, "buffer", strcat("train_batch_size is required for algorithm_type ", cfg.algorithm.algorithm_type));
  } else {
    b.train_batch_size = b.batch_size * cfg.repeat_times;
  }
  b.cache_dir = file::join(cfg.job_dir(), "buffer");
  auto& ei = b.explorer_input;
  const bool explores = cfg.mode == "both" || cfg.mode == "explore";
  if (explores && !offline && ei.tasksets.empty())
    bad(c, root, "buffer.explorer_input", strcat("a taskset is required in mode ", cfg.mode));
  if (cfg.mode == "bench" && ei.eval_tasksets.empty())
    bad(c, root, "buffer.explorer_input", "mode bench needs at least one entry in eval_tasksets");
  // Names are unique among the train tasksets and among the eval tasksets (eval metrics are keyed
  // eval/<name>/...); a train and an eval taskset may share one, as upstream's examples do.
  std::vector<std::string> train_names, eval_names;
  auto unique = [&](std::vector<std::string>& names, const std::string& n, const std::string& path) {
    if (std::find(names.begin(), names.end(), n) != names.end())
      bad(c, root, path, strcat("taskset name '", n, "' is used twice"));
    names.push_back(n);
  };
  for (size_t i = 0; i < ei.tasksets.size(); ++i) {
    auto& t = ei.tasksets[i];
    const std::string path = ei.tasksets.size() == 1 && tree_at(root, "buffer.explorer_input.taskset")
                                 ? "buffer.explorer_input.taskset"
                                 : strcat("buffer.explorer_input.tasksets[", i, "]");
    if (t.name.empty()) t.name = strcat("taskset_", i);
    t.index = static_cast<int64_t>(i);
    t.is_eval = false;
    t.repeat_times = cfg.repeat_times;
    if (t.default_workflow_type.empty()) t.default_workflow_type = ei.default_workflow_type;
    t.workflow_args = merged_workflow_args(ei.workflow_args, t.workflow_args);
    fill_taskset(t, cfg, c.dir);
    check_taskset(c, root, path, t, cfg.model);
    if (explores && t.default_workflow_type.empty() && t.format.workflow_key.empty())
      bad(c, root, path, "no workflow: set default_workflow_type here or buffer.explorer_input.default_workflow_type");
    unique(train_names, t.name, path);
  }
  // The task pipeline writes the first taskset (Trinity's default output), which need not exist yet.
  if (auto& tp = cfg.data_processor.task_pipeline) {
    if (tp->inputs.empty())
      bad(c, root, "data_processor.task_pipeline", "inputs is required: the raw taskset files to process");
    if (tp->output.empty()) {
      if (ei.tasksets.empty())
        bad(c, root, "data_processor.task_pipeline",
            "output is not set and there is no buffer.explorer_input.taskset to write to");
      ei.tasksets[0].path = resolve_path(ei.tasksets[0].path, c.dir, false);
      tp->output = ei.tasksets[0].path;
    }
  }
  for (size_t i = 0; i < ei.eval_tasksets.size(); ++i) {
    auto& t = ei.eval_tasksets[i];
    const std::string path = strcat("buffer.explorer_input.eval_tasksets[", i, "]");
    if (t.name.empty()) t.name = strcat("eval_taskset_", i);
    t.index = static_cast<int64_t>(i);
    t.is_eval = true;
    if (t.default_workflow_type.empty())
      t.default_workflow_type = !ei.default_eval_workflow_type.empty() ? ei.default_eval_workflow_type
                                                                        : ei.default_workflow_type;
    t.workflow_args = merged_workflow_args(ei.workflow_args, t.workflow_args);
    fill_taskset(t, cfg, c.dir);
    check_taskset(c, root, path, t, cfg.model);
    if (t.default_workflow_type.empty() && t.format.workflow_key.empty())
      bad(c, root, path, "no workflow: set default_workflow_type here or buffer.explorer_input.default_eval_workflow_type");
    unique(eval_names, t.name, path);
  }
  auto& eb = b.trainer_input.experience_buffer;
  if (!p.experience_schema_set) eb.schema_type = cfg.schema_type;
  eb.batch_size = b.train_batch_size;
  if (offline && (!p.experience_buffer_set || eb.storage_type == "queue"))
    bad(c, root, "buffer.trainer_input.experience_buffer",
        strcat("algorithm_type ", cfg.algorithm.algorithm_type, " reads its data from a file or sql experience_buffer ",
               "(storage_type: file, path: ...)"));
  if (cfg.mode == "both" && eb.storage_type == "file" && !offline) {
    c.warn("buffer.trainer_input.experience_buffer: storage_type file becomes queue in mode both (as in Trinity-RFT)");
    eb.storage_type = "queue";
  }
  // Trinity's default experience buffer is an in-memory queue; trinity's is sqlite in the job dir, so
  // a crash or kill loses no explored experience (a queue drops what was explored but not yet trained).
  if (!p.experience_buffer_set && !offline) eb.storage_type = "sql";
  if (eb.storage_type == "queue" && !offline) {
    const bool db = buffer::is_database_path(eb.path);
    const bool jsonl = eb.path.ends_with(".jsonl") || eb.path.ends_with(".json");
    if (!eb.path.empty() && !db && !jsonl) {
      c.warn(strcat("buffer.trainer_input.experience_buffer.path '", eb.path,
                    "' is not a database URL (sqlite:///x.db) ",
                    "or a .jsonl file; the queue stays in memory with no backup (as in Trinity-RFT)"));
      eb.path.clear();
    }
    // Upstream's queue is a named Ray actor both processes reach; trinity's in-memory queue lives in one
    // process, so separate explore / train / serve processes share a queue through its database path.
    if (cfg.mode == "explore" || cfg.mode == "train" || cfg.mode == "serve") {
      if (!db)
        bad(c, root, "buffer.trainer_input.experience_buffer",
            strcat("storage_type queue without a database path lives inside one process, so a mode ", cfg.mode,
                   " process cannot share it with its peer; set path: sqlite:///<file>.db (both processes use the ",
                   "same file) or storage_type: sql"));
      eb.storage_type = "sql";
    }
  }
  if (p.experience_buffer_set && eb.storage_type == "queue" && !offline)
    c.warn("buffer.trainer_input.experience_buffer: storage_type queue keeps experiences in memory: a crash "
           "or kill loses those explored but not yet trained (storage_type: sql, the default, is durable)");
  if ((eb.storage_type == "sql" || eb.storage_type == "sqlite") && eb.path.empty())
    eb.path = file::join(b.cache_dir, eb.name + ".db");
  eb.path = eb.storage_type == "file" ? resolve_path(eb.path, c.dir, true) : storage_path(eb.path, c.dir);
  for (auto& [name, sc] : b.trainer_input.auxiliary_buffers) {
    if (!p.aux_schema_set.count(name) && sc.storage_type == "file") sc.schema_type = "sft";
    if ((sc.storage_type == "sql" || sc.storage_type == "sqlite") && sc.path.empty())
      sc.path = file::join(b.cache_dir, sc.name + ".db");
    sc.path = sc.storage_type == "file" ? resolve_path(sc.path, c.dir, true) : storage_path(sc.path, c.dir);
  }
}

// What the user set in explorer.rollout_model / auxiliary_models[i] (`path`), after inheritance.
void check_inference(Ctx& c, const Tree& root, const std::string& path, const InferenceModelConfig& r,
                     const Sampling& s, const std::string& model_dir) {
  if (s.max_model_len) {
    positive(c, root, path + ".max_model_len", static_cast<double>(r.max_model_len));
    check_model_len(c, root, path + ".max_model_len", r.max_model_len, model_dir);
  }
  if (s.temperature) check_temperature(c, root, path + ".temperature", r.temperature);
  auto tokens = [&](const char* key, bool set, int64_t v) {
    if (set && (v <= 0 || v > r.max_model_len))
      bad(c, root, strcat(path, ".", key), strcat("must be in [1, max_model_len = ", r.max_model_len, "], got ", v));
  };
  tokens("max_prompt_tokens", s.max_prompt_tokens.has_value(), r.max_prompt_tokens);
  tokens("max_response_tokens", s.max_response_tokens.has_value(), r.max_response_tokens);
}

void derive_explorer(Ctx& c, const Tree& root, Parsed& p) {
  Config& cfg = p.cfg;
  ExplorerConfig& e = cfg.explorer;
  inherit(e.rollout_model, p.rollout, cfg.model);
  if (!e.rollout_model.enable_thinking) e.rollout_model.enable_thinking = cfg.model.enable_thinking;
  if (e.rollout_model.chat_template.empty()) e.rollout_model.chat_template = cfg.model.custom_chat_template;
  if (e.rollout_model.engine_num != 1) {
    positive(c, root, "explorer.rollout_model.engine_num", static_cast<double>(e.rollout_model.engine_num));
    c.warn(strcat("explorer.rollout_model.engine_num: ", e.rollout_model.engine_num,
                  " engines requested; trinity runs one engine with continuous batching (engine_num = 1)"));
    e.rollout_model.engine_num = 1;
  }
  positive(c, root, "explorer.rollout_model.kv_cache_bytes", static_cast<double>(e.rollout_model.kv_cache_bytes));
  check_inference(c, root, "explorer.rollout_model", e.rollout_model, p.rollout, cfg.model.model_path);
  for (size_t i = 0; i < e.auxiliary_models.size(); ++i) {
    auto& a = e.auxiliary_models[i];
    const std::string path = strcat("explorer.auxiliary_models[", i, "]");
    if (a.model_path.empty()) bad(c, root, path, "model_path is required");
    a.model_path = resolve_path(a.model_path, c.dir, true);
    if (a.name.empty()) a.name = strcat("auxiliary_model_", i);
    Sampling s = p.aux[i];
    ModelConfig defaults;  // auxiliary models do not inherit the policy's sampling, only its lengths
    defaults.max_model_len = cfg.model.max_model_len;
    defaults.max_prompt_tokens = cfg.model.max_prompt_tokens;
    defaults.max_response_tokens = cfg.model.max_response_tokens;
    inherit(a, s, defaults);
    check_inference(c, root, path, a, s, a.model_path);
    a.enable_openai_api = true;  // as in Trinity
    if (a.engine_num != 1) {
      c.warn(strcat(path, ".engine_num: trinity runs one engine per model"));
      a.engine_num = 1;
    }
  }
  positive(c, root, "explorer.runner_per_model", static_cast<double>(e.runner_per_model));
  positive(c, root, "explorer.proxy_pending_ttl", e.proxy_pending_ttl);
  if (e.runner_per_model > kMaxRunners)
    bad(c, root, "explorer.runner_per_model",
        strcat(e.runner_per_model, " is above trinity's limit of ", kMaxRunners, " (each runner is a thread)"));
  if (e.threads < -1)
    bad(c, root, "explorer.threads",
        strcat(e.threads, ": expected -1 (no budget), 0 (half the cores) or a thread count"));
  positive(c, root, "explorer.max_timeout", e.max_timeout);
  positive(c, root, "explorer.max_retry_times", static_cast<double>(e.max_retry_times), true);
  positive(c, root, "explorer.eval_interval", static_cast<double>(e.eval_interval));
  positive(c, root, "explorer.dynamic_timeout.ratio", e.dynamic_timeout.ratio);
  check_choice(c, root, "explorer.concurrent_mode", e.concurrent_mode, {"sequential", "asynchronous", "multi-threading"});
  if (e.max_repeat_times_per_runner)
    positive(c, root, "explorer.max_repeat_times_per_runner", static_cast<double>(*e.max_repeat_times_per_runner));
}

void derive_sync_trainer(Ctx& c, const Tree& root, Parsed& p) {
  Config& cfg = p.cfg;
  SynchronizerConfig& y = cfg.synchronizer;
  check_choice(c, root, "synchronizer.sync_style", y.sync_style,
               {"fixed", "explorer_driven", "trainer_driven", "fully_async"});
  if (p.sync_method) check_choice(c, root, "synchronizer.sync_method", *p.sync_method, {"nccl", "memory", "checkpoint"});
  if (cfg.mode == "both") {
    y.sync_method = p.sync_method.value_or("memory");
    if (y.sync_method == "nccl") {
      c.warn("synchronizer.sync_method: nccl is a GPU broadcast; trinity runs explorer and trainer in one process "
             "and uses memory");
      y.sync_method = "memory";
    }
  } else {
    if (p.sync_method && *p.sync_method != "checkpoint")
      c.warn(strcat("synchronizer.sync_method: ", *p.sync_method, " is not possible in mode ", cfg.mode,
                    "; using checkpoint (as in Trinity-RFT)"));
    y.sync_method = "checkpoint";
  }
  positive(c, root, "synchronizer.sync_interval", static_cast<double>(y.sync_interval));
  positive(c, root, "synchronizer.sync_offset", static_cast<double>(y.sync_offset), true);
  positive(c, root, "synchronizer.sync_timeout", y.sync_timeout);
  TrainerConfig& t = cfg.trainer;
  const bool offline = cfg.schema_type != "experience";
  if (offline && t.save_interval > 0) y.sync_interval = t.save_interval;
  ExplorerConfig& e = cfg.explorer;
  if (cfg.mode != "bench" && !offline && e.eval_interval % y.sync_interval != 0) {
    const int64_t rounded = std::max<int64_t>(e.eval_interval / y.sync_interval, 1) * y.sync_interval;
    c.warn(strcat("explorer.eval_interval ", e.eval_interval, " is not a multiple of synchronizer.sync_interval ",
                  y.sync_interval, "; using ", rounded));
    e.eval_interval = rounded;
  }
  positive(c, root, "trainer.save_interval", static_cast<double>(t.save_interval), true);
  if (t.total_steps) positive(c, root, "trainer.total_steps", static_cast<double>(*t.total_steps));
  positive(c, root, "trainer.grad_clip", t.grad_clip, true);
  check_choice(c, root, "trainer.save_hf_checkpoint", t.save_hf_checkpoint, {"always", "never", "last"});
  check_choice(c, root, "trainer.save_hf_dtype", t.save_hf_dtype, {"auto", "float32", "bfloat16", "float16"});
  if (t.max_checkpoints_to_keep)
    positive(c, root, "trainer.max_checkpoints_to_keep", static_cast<double>(*t.max_checkpoints_to_keep));
  // Trinity's auto value is 2 x max_model_len; trinity packs at least 4096 tokens per micro-batch, because
  // on CPU many tiny micro-batches (short sequences) cost far more than the memory they save.
  t.max_token_len_per_gpu = p.max_token_len_per_gpu.value_or(std::max<int64_t>(2 * cfg.model.max_model_len, 4096));
  positive(c, root, "trainer.max_token_len_per_gpu", static_cast<double>(t.max_token_len_per_gpu));
  // Upstream accepts a budget below max_model_len: only each actual sequence must fit, which the
  // trainer checks per batch (pipeline::micro_ranges names the sequence that does not).
  if (t.max_token_len_per_gpu < cfg.model.max_model_len)
    c.warn(strcat("trainer.max_token_len_per_gpu ", t.max_token_len_per_gpu, " is below model.max_model_len (",
                  cfg.model.max_model_len, "): a training step stops with an error if a sequence is longer"));
  positive(c, root, "trainer.micro_batch_size", static_cast<double>(t.micro_batch_size));
  positive(c, root, "trainer.critic.lr", t.critic.lr, true);
  positive(c, root, "trainer.critic.cliprange_value", t.critic.cliprange_value);
}

}  // namespace

std::string job_dir_name_problem(const std::string& name) {
  if (name.empty()) return "must not be empty";
  if (name.front() == '/') return "must not be an absolute path";
  if (name.find('\0') != std::string::npos) return "must not contain a NUL byte";
  size_t start = 0;
  for (;;) {
    const size_t slash = name.find('/', start);
    const std::string part = name.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.empty() || part == "." || part == "..")
      return "must be a directory name (or names joined by '/'), none of them empty, '.' or '..'";
    if (slash == std::string::npos) return "";
    start = slash + 1;
  }
}

void derive(Ctx& c, const Tree& root, Parsed& p) {
  Config& cfg = p.cfg;
  if (cfg.mode == "colocate")
    throw UnsupportedError("config", strcat(tree_location(at_or(root, "mode"), c.file),
                                            ": mode: colocate (explorer and trainer sharing one GPU) is not supported "
                                            "by trinity; use mode: both (one process)"));
  check_choice(c, root, "mode", cfg.mode, {"both", "explore", "train", "bench", "serve"});
  for (const auto& [key, v] :
       {std::pair<const char*, const std::string&>{"project", cfg.project}, {"group", cfg.group}, {"name", cfg.name}}) {
    if (std::string(key) == "group" && v.empty()) continue;  // no group level
    if (const std::string why = job_dir_name_problem(v); !why.empty())
      bad(c, root, key, strcat("'", v, "' ", why, " (the job directory is checkpoint_root_dir/project/group/name)"));
  }
  cfg.checkpoint_root_dir = std::filesystem::absolute(cfg.checkpoint_root_dir.empty() ? "." : cfg.checkpoint_root_dir)
                                .lexically_normal()
                                .string();
  if (cfg.checkpoint_root_dir.size() > 1 && cfg.checkpoint_root_dir.back() == '/') cfg.checkpoint_root_dir.pop_back();
  {
    const auto rel =
        std::filesystem::path(cfg.job_dir()).lexically_normal().lexically_relative(cfg.checkpoint_root_dir);
    TRINITY_ASSERT(!rel.empty() && *rel.begin() != "..", "job dir ", cfg.job_dir(), " outside ",
                   cfg.checkpoint_root_dir);
  }
  // checkpoint_job_dir is always checkpoint_root_dir/project/group/name (as in Trinity, which overwrites
  // it); a config that names another one gets a warning, not a silent surprise.
  if (const Tree* jd = root.find("checkpoint_job_dir"); jd && jd->is_scalar() && !jd->scalar.empty()) {
    const std::string given = std::filesystem::absolute(jd->scalar).lexically_normal().string();
    if (std::filesystem::path(given) != std::filesystem::path(cfg.job_dir()))
      c.warn(strcat(c.loc(*jd), ": checkpoint_job_dir '", jd->scalar, "' is ignored: the job dir is derived from ",
                    "checkpoint_root_dir/project/group/name = ", cfg.job_dir()));
  }
  // Algorithm: resolving it validates every component name and argument.
  {
    const algo::Algorithm alg(cfg.algorithm);
    if (alg.advantage_fn() && (alg.advantage_fn()->needs() & algo::kAdvNeedNec))
      throw UnsupportedError("config",
                             strcat(tree_location(at_or(root, "algorithm.advantage_fn"), c.file),
                                    ": algorithm.advantage_fn: ", alg.advantage_fn_name(), " ", algo::kNecUnsupported));
    cfg.repeat_times = alg.repeat_times();
    cfg.algorithm.repeat_times = cfg.repeat_times;  // canonical: the preset default / dpo's forced 2 made explicit
    if (cfg.repeat_times > kMaxRepeatTimes)
      bad(c, root, "algorithm.repeat_times",
          strcat(cfg.repeat_times, " is above trinity's limit of ", kMaxRepeatTimes, " rollouts per task"));
    cfg.schema_type = alg.schema() == algo::Schema::kSft ? "sft" : alg.schema() == algo::Schema::kDpo ? "dpo" : "experience";
  }
  OptimizerConfig& o = cfg.optimizer;
  positive(c, root, "algorithm.optimizer.lr", o.lr, true);
  if (o.lr_warmup_steps_ratio < 0 || o.lr_warmup_steps_ratio > 1)
    bad(c, root, "algorithm.optimizer.lr_warmup_steps_ratio", strcat("must be in [0, 1], got ", o.lr_warmup_steps_ratio));
  if (o.min_lr_ratio < 0 || o.min_lr_ratio > 1)
    bad(c, root, "algorithm.optimizer.min_lr_ratio", strcat("must be in [0, 1], got ", o.min_lr_ratio));
  check_choice(c, root, "algorithm.optimizer.lr_scheduler_type", o.lr_scheduler_type, {"constant", "cosine"});
  if (o.optimizer_type == "sgd")
    throw UnsupportedError("config", strcat(tree_location(at_or(root, "algorithm.optimizer.optimizer_type"), c.file),
                                            ": algorithm.optimizer.optimizer_type: sgd is not implemented in trinity "
                                            "(adam / adamw are)"));
  check_choice(c, root, "algorithm.optimizer.optimizer_type", o.optimizer_type, {"adam", "adamw"});
  for (double beta : o.betas)
    if (beta < 0 || beta >= 1) bad(c, root, "algorithm.optimizer.betas", strcat("each beta must be in [0, 1), got ", beta));
  positive(c, root, "algorithm.optimizer.weight_decay", o.weight_decay, true);
  derive_model(c, root, p);
  derive_buffer(c, root, p);
  derive_explorer(c, root, p);
  derive_sync_trainer(c, root, p);
  MonitorConfig& mon = cfg.monitor;
  if (mon.monitor_type == "wandb" || mon.monitor_type == "mlflow" || mon.monitor_type == "swanlab") {
    c.warn(strcat("monitor.monitor_type: ", mon.monitor_type, " is not available in trinity; writing jsonl metrics"));
    mon.monitor_type = "jsonl";
  }
  check_choice(c, root, "monitor.monitor_type", mon.monitor_type, {"tensorboard", "jsonl", "none"});
  std::string& lvl = cfg.log.level;
  std::transform(lvl.begin(), lvl.end(), lvl.begin(), [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
  if (lvl == "WARN") lvl = "WARNING";
  check_choice(c, root, "log.level", lvl, {"DEBUG", "INFO", "WARNING", "ERROR"});
}

}  // namespace trinity::config::detail
