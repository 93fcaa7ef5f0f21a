// The typed run configuration: Trinity-RFT's YAML schema (trinity-rft.md §2) with its key names and
// defaults, restricted to what trinity implements. Known Trinity keys without meaning here (vLLM, Ray,
// verl, cluster) are accepted with one warning each; unknown keys are ConfigErrors with file:line and a
// "did you mean". Every "auto" value of Trinity is derived by the loader (prompt/response split,
// train_batch_size, taskset names/indices, rollout_args from model.*, sync_method per mode, ...), so a
// loaded Config is complete: consumers never re-apply defaults. YAML/JSON libraries stay out of here.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithm/preset.h"
#include "buffer/config.h"

namespace trinity::config {

namespace detail {
struct Source;  // the resolved YAML tree a Config was read from (for stages / re-derivation)
}

// Bounds `config check` enforces on values that would otherwise exhaust memory, threads or time
// (docs/config.md, "Limits"). kGreedyTemperature is the engine's (engine/sampling.h, vLLM's threshold):
// a temperature in (0, 1e-5) samples greedily, which the loader warns about.
inline constexpr double kGreedyTemperature = 1e-5;
inline constexpr int64_t kMaxModelLen = int64_t{1} << 24;  // tokens of context (max_model_len and its parts)
inline constexpr int64_t kMaxRepeatTimes = 65536;          // rollouts per task (repeat_times, rollout_args.n)
inline constexpr int64_t kMaxRunners = 1024;               // explorer.runner_per_model (threads)

// algorithm.optimizer (typed; also mirrored as scalars into AlgorithmSpec::optimizer).
struct OptimizerConfig {
  double lr = 1e-6;
  int64_t lr_warmup_steps = -1;       // -1: use lr_warmup_steps_ratio
  double lr_warmup_steps_ratio = 0.0;
  double min_lr_ratio = 0.01;         // applied by trinity's cosine schedule
  std::string lr_scheduler_type = "constant";  // constant | cosine (warmup_style: deprecated alias)
  std::string optimizer_type = "adam";         // adam | adamw (both AdamW)
  std::vector<double> betas{0.9, 0.999};
  double weight_decay = 0.01;
  double clip_grad = 1.0;  // the effective value is trainer.grad_clip
  bool operator==(const OptimizerConfig&) const = default;
};

struct ModelConfig {
  std::string model_path;         // absolute when it exists relative to the config dir
  std::string critic_model_path;  // auto: model_path
  int64_t max_model_len = 0;      // all three resolved (§2.3 rules)
  int64_t max_prompt_tokens = 0;
  int64_t max_response_tokens = 0;
  int64_t min_response_tokens = 0;
  double temperature = 1.0, top_p = 1.0;
  int64_t top_k = -1, logprobs = 0;
  double repetition_penalty = 1.0;
  std::optional<bool> enable_thinking;
  std::string custom_chat_template;  // chat_template_path's file content when that is set
  std::string chat_template_path;
  bool enable_prompt_truncation = true;
  // Bench mode only: the rollout model is an OpenAI-compatible API instead of local weights. The base
  // URL and key are read from the named environment variables when the run starts (a missing URL
  // variable is a ConfigError then; a missing key variable sends "EMPTY").
  struct ExternalModel {
    bool enable = false;
    std::string base_url_env = "OPENAI_BASE_URL";
    std::string api_key_env = "OPENAI_API_KEY";
    std::string model_name;  // "" = model_path
    bool operator==(const ExternalModel&) const = default;
  } external_model;
  // model.lora_configs (at most one entry): LoRA adapters on the actor (model/lora.h). `path`: start
  // from an existing PEFT adapter directory (its adapter_config.json sets rank, alpha and targets).
  struct Lora {
    std::string name = "default";
    std::string path;
    std::string base_model_name;
    int64_t lora_rank = 32;
    double lora_alpha = 32.0;
    double lora_dropout = 0.0;  // trinity extension (PEFT's lora_dropout)
    std::string lora_dtype = "auto";
    std::vector<std::string> target_modules{"all-linear"};
    std::vector<std::string> exclude_modules;
    bool operator==(const Lora&) const = default;
  };
  std::optional<Lora> lora;
  bool operator==(const ModelConfig&) const = default;
};

struct BufferConfig {
  int64_t batch_size = 1;        // tasks per explore step
  int64_t train_batch_size = 0;  // experiences per train step (auto batch_size * repeat_times)
  int64_t total_epochs = 1;
  std::optional<int64_t> total_steps;
  std::string cache_dir;  // auto <job_dir>/buffer
  struct ExplorerInput {
    std::vector<buffer::TasksetConfig> tasksets;  // `taskset:` becomes a one-element list
    std::vector<buffer::TasksetConfig> eval_tasksets;
    std::string default_workflow_type, default_eval_workflow_type, default_reward_fn_type;
    // Defaults under every taskset's own workflow_args (a taskset's keys win), e.g. the command of
    // command_workflow for the train and eval tasksets alike. JSON object text.
    std::string workflow_args = "{}";
    bool operator==(const ExplorerInput&) const = default;
  } explorer_input;
  struct TrainerInput {
    buffer::StorageConfig experience_buffer;
    std::map<std::string, buffer::StorageConfig> auxiliary_buffers;
    bool operator==(const TrainerInput&) const = default;
  } trainer_input;
  bool operator==(const BufferConfig&) const = default;
};

// explorer.rollout_model and explorer.auxiliary_models[i] (sampling fields inherit model.*).
struct InferenceModelConfig {
  std::string name;
  std::string model_path;  // auxiliary models only (the rollout model uses model.model_path)
  int64_t engine_num = 1;
  int64_t seed = 42;
  double temperature = 1.0, top_p = 1.0;
  int64_t top_k = -1, logprobs = 0;
  double repetition_penalty = 1.0;
  int64_t max_model_len = 0, max_prompt_tokens = 0, max_response_tokens = 0, min_response_tokens = 0;
  bool enable_prompt_truncation = true;
  std::optional<bool> enable_thinking;
  std::string chat_template;
  bool ignore_eos = false;
  bool enable_history = false;
  bool enable_openai_api = false;
  int64_t kv_cache_bytes = int64_t{1} << 30;  // trinity extension: KV cache budget of the engine
  bool enable_prefix_caching = true;          // the engine's prefix cache (EngineOptions::prefix_cache)
  // trinity extension: the engine's copy of the linear weights, float32 (logprobs equal the trainer's)
  // or bfloat16 (half the bytes per decoded token; pair it with trainer.rollout_correction).
  std::string weight_dtype = "float32";
  bool operator==(const InferenceModelConfig&) const = default;
};

struct ExplorerConfig {
  std::string name = "explorer";
  int64_t runner_per_model = 8;
  // trinity extension: kernel threads of the explorer's engines while the trainer is busy too
  // (`both` mode; the trainer gets the other cores). 0: half the cores; -1: no budget, each uses
  // every core. Either one alone always uses every core (core/parallel.h).
  int64_t threads = 0;
  double max_timeout = 1800;
  int64_t max_retry_times = 2;
  int64_t eval_interval = 100;  // rounded to a multiple of sync_interval (except bench/sft/dpo)
  bool eval_on_startup = true;
  bool bench_on_latest_checkpoint = false;
  std::string concurrent_mode = "sequential";
  std::optional<int64_t> max_repeat_times_per_runner;
  std::map<std::string, std::string> env_vars;
  double runner_state_report_interval = 0;
  int64_t proxy_port = 8010;  // serve mode
  // Trinity's default is 0.0.0.0; trinity serves on loopback unless told otherwise (an open
  // endpoint that trains on its traffic is not a safe default).
  std::string listen_address = "127.0.0.1";
  std::string proxy_api_key;         // trinity extension: the serve endpoint's key ("" = $TRINITY_API_KEY, else none)
  double proxy_pending_ttl = 86400;  // trinity extension: seconds an unrewarded served call is kept
  InferenceModelConfig rollout_model;
  std::vector<InferenceModelConfig> auxiliary_models;
  struct DynamicTimeout {
    bool enable = false;
    double ratio = 3.0;
    bool operator==(const DynamicTimeout&) const = default;
  } dynamic_timeout;
  bool operator==(const ExplorerConfig&) const = default;
};

struct SynchronizerConfig {
  std::string sync_method = "memory";  // memory | checkpoint (nccl -> memory with a warning)
  std::string sync_style = "fixed";    // fixed | explorer_driven | trainer_driven | fully_async (newer upstream:
                                       // the explorer never waits for weights, as explorer_driven)
  int64_t sync_interval = 1;
  int64_t sync_offset = 0;
  double sync_timeout = 3600;
  bool operator==(const SynchronizerConfig&) const = default;
};

struct TrainerConfig {
  std::string name = "trainer";
  int64_t save_interval = 0;  // 0 = only the final save
  std::optional<int64_t> total_steps;
  double grad_clip = 1.0;
  std::string save_hf_checkpoint = "last";  // always | never | last
  std::string save_hf_dtype = "auto";       // trinity extension: auto (the base model's) | float32 |
                                            // bfloat16 | float16, dtype of global_step_N/huggingface
  std::optional<int64_t> max_checkpoints_to_keep;
  bool enable_preview = true;
  bool use_dynamic_bsz = true;
  int64_t max_token_len_per_gpu = 0;  // auto ceil(2 * max_model_len): micro-batch token budget
  int64_t micro_batch_size = 1;       // trinity extension (alias ppo_micro_batch_size_per_gpu): rows
                                      // per micro-batch when use_dynamic_bsz is false
  bool fix_actor_microbatch_loss_scale = false;
  // Activation checkpointing of the actor and critic (verl: actor_rollout_ref.model.
  // enable_gradient_checkpointing, on by default there; off here, where memory is rarely the limit
  // of a CPU run and recomputing costs ~1/3 more step time).
  bool gradient_checkpointing = false;
  // trinity extension: rows of a micro-batch with equal prompts (a task's repeat_times samples, a DPO
  // pair) compute the prompt once, forward and backward (trainer/packed_batch.h). Same logprobs and
  // gradients up to float summation order; false computes every row's prompt on its own.
  bool share_prompt_prefix = true;
  // verl's algorithm.rollout_correction (trainer/trainer.h TrainerOptions::RolloutCorrection); also read
  // from trainer.trainer_config.algorithm.rollout_correction.
  struct RolloutCorrection {
    bool bypass_mode = true;
    std::string rollout_is;  // "" (null), token, sequence
    double rollout_is_threshold = 2.0;
    bool operator==(const RolloutCorrection&) const = default;
  } rollout_correction;
  struct Critic {  // trinity extension (verl's critic defaults)
    double lr = 1e-5;
    double cliprange_value = 0.5;
    bool operator==(const Critic&) const = default;
  } critic;
  bool operator==(const TrainerConfig&) const = default;
};

struct MonitorConfig {
  std::string monitor_type = "tensorboard";  // tensorboard | jsonl | none (wandb/mlflow/swanlab -> jsonl)
  bool detailed_stats = false;
  std::string monitor_args = "{}";  // JSON object text
  bool operator==(const MonitorConfig&) const = default;
};

struct LogConfig {
  std::string level = "INFO";
  bool operator==(const LogConfig&) const = default;
};

// One entry of `stages:` as written (sections present are replaced wholesale by expand_stages).
struct StageInfo {
  std::string stage_name;
  std::optional<std::string> mode;
  std::vector<std::string> sections;  // which of algorithm/buffer/explorer/trainer/data_processor are set
  bool operator==(const StageInfo&) const = default;
};

// data_processor (trinity-rft.md §2.11): the experience pipeline's operators, run by the explorer on
// each step's experiences (pipeline/operators.h), and the task pipeline, run over the raw taskset
// before training or by `trinity data process` (launcher/task_pipeline_run.h).
struct DataProcessorConfig {
  struct Operator {
    std::string name;
    std::string args = "{}";  // JSON object text
    bool operator==(const Operator&) const = default;
  };
  struct TaskPipeline {
    std::vector<Operator> operators;
    int64_t num_process = 4;
    std::vector<std::string> inputs;         // local files, absolute after loading
    std::string output;                      // a directory; "" never after loading (the first taskset's path)
    std::vector<std::string> target_fields;  // the columns text operators read ([] = the prompt key)
    std::string priority_weights = "{}";     // JSON object {difficulty, diversity, usage_frequency, quality}
    int64_t top_k = -1;
    bool operator==(const TaskPipeline&) const = default;
  };
  std::vector<Operator> experience_operators;
  std::optional<TaskPipeline> task_pipeline;
  bool operator==(const DataProcessorConfig&) const = default;
};

struct Config {
  std::string mode = "both";  // both | explore | train | bench | serve
  std::string project = "Trinity-RFT";
  std::string group;
  std::string name = "rft";
  std::string checkpoint_root_dir;  // absolute (relative to the working directory)
  bool continue_from_checkpoint = true;
  algo::AlgorithmSpec algorithm;
  OptimizerConfig optimizer;  // algorithm.optimizer
  int64_t repeat_times = 1;   // resolved algorithm repeat_times (preset default, dpo forced 2)
  std::string schema_type = "experience";  // experience | sft | dpo (from the algorithm preset)
  ModelConfig model;
  BufferConfig buffer;
  ExplorerConfig explorer;
  SynchronizerConfig synchronizer;
  TrainerConfig trainer;
  MonitorConfig monitor;
  LogConfig log;
  DataProcessorConfig data_processor;
  std::vector<StageInfo> stages;
  std::string config_path;  // the file it was loaded from ("" for text)
  std::string config_dir;   // base of relative paths
  std::shared_ptr<const detail::Source> source;

  // checkpoint_root_dir/project/group/name (an empty group is skipped).
  std::string job_dir() const;
  // Every field (the round-trip test: load(to_yaml(c)) == c); `source` compares as a pointer.
  bool operator==(const Config&) const = default;
};

struct LoadResult {
  Config config;
  std::vector<Config> stages;         // expand_stages(config); empty without `stages:`
  std::vector<std::string> warnings;  // each once, in order; the caller prints them
};

// Loads a YAML config file. `overrides` are "key.path=value" (`--set`), applied before interpolation.
// Throws ConfigError / UnsupportedError / IoError naming file:line and the key.
LoadResult load_config(const std::string& path, const std::vector<std::string>& overrides = {});
// Same from text; relative paths resolve against base_dir; `label` names the source in messages.
LoadResult load_config_text(const std::string& yaml_text, const std::string& label, const std::string& base_dir,
                            const std::vector<std::string>& overrides = {});

// One Config per stage: a deep copy of the global config with the stage's non-null sections replaced
// wholesale (no deep merge, Trinity semantics), name = name/stage_name, save_hf_checkpoint = last.
std::vector<Config> expand_stages(const Config& cfg, std::vector<std::string>* warnings = nullptr);
// Re-derives `cfg` with model.model_path replaced (the launcher chains stage i's checkpoint into
// stage i+1); everything derived from it (critic_model_path when not set, ...) follows.
Config with_model_path(const Config& cfg, const std::string& model_path, std::vector<std::string>* warnings = nullptr);

// The fully resolved config as YAML (every key, including derived ones).
std::string to_yaml(const Config& cfg);

}  // namespace trinity::config
