// `trinity export merge --base DIR --adapter DIR --out DIR [--dtype auto|float32|bfloat16]`: merges a
// PEFT LoRA adapter into its base model (W + lora_alpha/r · B A on every adapted linear) and writes a
// plain Hugging Face model directory (config.json, model.safetensors, the base's tokenizer files).
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "hub/model.h"
#include "model/checkpoint_dtype.h"
#include "model/transformer.h"

namespace trinity::cli {

int cmd_export_merge(const Argv& argv) {
  Args a("export merge", argv, {"base", "adapter", "out", "dtype"});
  const std::string base = hub::resolve_model_dir(a.str("base"), "--base");
  const std::string adapter = a.str("adapter");
  const std::string out = a.str("out");
  const std::string dt = a.str("dtype", "auto");
  tensor::DType dtype = tensor::DType::kF32;
  if (dt == "auto")
    dtype = model::stored_dtype(base);
  else if (!model::dtype_from_torch_name(dt, &dtype) || dtype == tensor::DType::kF16)
    throw ConfigError("cli", strcat("export merge: --dtype must be auto, float32 or bfloat16, got '", dt, "'"));
  model::Transformer m = model::Transformer::load(base, model::HeadKind::kLm, model::lossless_storage(base));
  model::load_adapter(m, adapter);
  const model::LoraConfig lc = m.lora_config();
  model::SaveOptions so;
  so.dtype = dtype;
  so.copy_tokenizer_from = base;
  model::save_merged(m, out, so);  // merged one weight at a time: no merged copy of the model
  std::printf("wrote %s: %s + LoRA rank %lld (alpha %g, %zu adapted matrices) merged, %s\n", out.c_str(), base.c_str(),
              static_cast<long long>(lc.rank), lc.alpha, m.lora_specs().size() / 2, model::torch_dtype_name(dtype));
  return 0;
}

}  // namespace trinity::cli
