// Hugging Face checkpoint directories: save a model as config.json + model.safetensors (+ the
// tokenizer files of the source model, when it had them) so transformers loads it as is.
// The directory is written atomically: everything goes to "<dir>.tmp.<pid>" and is renamed into
// place, so a crash never leaves a half checkpoint at <dir>.
#pragma once

#include <string>
#include <vector>

#include "model/config.h"
#include "model/safetensors.h"

namespace trinity::model {

struct SaveOptions {
  tensor::DType dtype = tensor::DType::kF32;  // F32 or BF16 on disk
  std::string copy_tokenizer_from;           // source model dir ("" = none)
};

// Writes <dir>/config.json (torch_dtype set to match `dtype`), <dir>/model.safetensors and, when
// opts.copy_tokenizer_from has them, tokenizer.json, tokenizer_config.json, special_tokens_map.json,
// vocab.json, merges.txt, generation_config.json, added_tokens.json, chat_template.jinja,
// tokenizer.model. Replaces an existing <dir> atomically; refuses (IoError) to replace a directory
// that is neither empty nor a checkpoint (no config.json / *.safetensors). Every tensor of
// param_specs(cfg) must be present with its shape; extra tensors (e.g. a value head) are saved too.
void save_checkpoint(const std::string& dir, const ModelConfig& cfg,
                     const std::vector<NamedTensor>& tensors, const SaveOptions& opts = {});

// The HF parameter names and shapes of a model config, in a fixed order (embedding, per layer
// q/k/v/o (+bias, +q/k norm), input/post-attention norms, MLP gate/up/down, final norm, lm_head
// unless tied). This is the single source of truth for parameter naming.
struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
};
std::vector<ParamSpec> param_specs(const ModelConfig& cfg);

// Every parameter of param_specs(cfg) read from `ws` as an owned F32 tensor (bf16/f16 upcast), in
// param_specs order. A missing tensor or a wrong shape is an IoError naming file and tensor;
// tensors the config does not use (e.g. lm_head.weight of a tied model) are ignored.
std::vector<tensor::Tensor> load_params(const WeightSource& ws, const ModelConfig& cfg);

}  // namespace trinity::model
