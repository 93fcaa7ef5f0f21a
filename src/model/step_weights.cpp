// Step-directory weights for checkpoint-synced explorers (model/step_weights.h).
#include "model/step_weights.h"

#include "core/error.h"
#include "core/file.h"
#include "model/checkpoint_dtype.h"
#include "model/lora.h"

namespace trinity::model {

std::string step_adapter_dir(const std::string& step_dir) {
  return file::join(step_dir, "actor/lora_adapter");
}

std::shared_ptr<const Transformer> load_rollout_weights(const std::string& dir) {
  return std::make_shared<const Transformer>(Transformer::load(dir, HeadKind::kLm, lossless_storage(dir)));
}

std::shared_ptr<const Transformer> StepWeights::base() {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto b = loaded_.lock()) return b;
  auto b = load_rollout_weights(base_dir_);
  loaded_ = b;
  return b;
}

std::shared_ptr<const Transformer> StepWeights::with_adapter(const std::string& adapter_dir) {
  const auto b = base();
  {
    std::lock_guard<std::mutex> lock(mu_);
    kept_ = b;  // every version is built on it
  }
  // Frozen base shared (copy on write): the engine sees the same frozen_base_id for every version
  // and packs only the adapters.
  auto m = std::make_shared<Transformer>(b->config(), b->head(), b->weight_storage(), b.get());
  load_adapter(*m, adapter_dir);
  return m;
}

std::shared_ptr<const Transformer> StepWeights::load(const std::string& step_dir) {
  const std::string ad = step_adapter_dir(step_dir);
  if (is_adapter_dir(ad)) return with_adapter(ad);
  const std::string dir = exact_weights_dir(step_dir);
  if (!file::exists(file::join(dir, "config.json")))
    throw IoError("checkpoint",
                  strcat(step_dir, ": holds no weights (no ", ad, ", no config.json in actor/ or huggingface/)"));
  return load_rollout_weights(dir);
}

}  // namespace trinity::model
