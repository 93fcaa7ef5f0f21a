// Algorithm presets (Trinity-RFT algorithm_type -> components) and AlgorithmSpec, the YAML
// `algorithm:` section as the user wrote it. Resolution (algorithm.h): every component name and arg
// comes from the user if set, else from the preset; user `*_args` are merged key by key over the
// preset's args, which are merged over the component's defaults (Trinity replaces the whole dict,
// [obs]). The policy loss's loss_agg_mode: policy_loss_fn_args.loss_agg_mode if set, else
// algorithm.loss_agg_mode if set, else the loss's own default (GSPO: seq-mean-token-mean).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "algorithm/args.h"

namespace trinity::algo {

enum class AdvLocation { kNone, kExplorer, kTrainer };  // where advantages are computed
enum class Schema { kExperience, kSft, kDpo };          // what the trainer reads

struct Preset {
  std::string name;
  std::string doc;    // one line, with the paper
  int64_t repeat_times = 1;
  bool repeat_forced = false;  // dpo: always 2 (a chosen/rejected pair)
  std::string advantage_fn;    // "" = none
  ArgMap advantage_fn_args;
  std::string policy_loss_fn;
  ArgMap policy_loss_fn_args;
  std::string kl_penalty_fn = "none";
  std::string kl_loss_fn = "k2";
  std::string entropy_loss_fn = "default";
  std::string sample_strategy = "default";
  AdvLocation location = AdvLocation::kExplorer;
  Schema schema = Schema::kExperience;
};

const std::vector<Preset>& presets();
const Preset& find_preset(const std::string& algorithm_type);  // ConfigError lists valid names

// The `algorithm:` section. Unset optionals fall back to the preset.
struct AlgorithmSpec {
  std::string algorithm_type = "ppo";
  std::optional<int64_t> repeat_times;
  std::optional<std::string> advantage_fn, policy_loss_fn, kl_penalty_fn, kl_loss_fn, entropy_loss_fn,
      sample_strategy, loss_agg_mode;
  ArgMap advantage_fn_args, policy_loss_fn_args, kl_penalty_fn_args, kl_loss_fn_args, entropy_loss_fn_args,
      sample_strategy_args;
  ArgMap optimizer;  // algorithm.optimizer.*: kept for the trainer, not interpreted here

  // Sets a scalar key (algorithm_type, repeat_times, *_fn, sample_strategy, loss_agg_mode).
  // ConfigError for unknown keys (with a "did you mean" hint) or wrong value types.
  void set(const std::string& key, const ArgValue& v);
  // Sets a mapping key: one of the *_args keys or "optimizer".
  void set_map(const std::string& key, const ArgMap& m);
  static const std::vector<std::string>& scalar_keys();
  static const std::vector<std::string>& map_keys();
  bool operator==(const AlgorithmSpec&) const = default;
};

// Parses the `algorithm:` section from JSON text (used by `trinity debug loss` and tests).
AlgorithmSpec algorithm_spec_from_json(const std::string& json_text);

}  // namespace trinity::algo
