// Checkpoint dtypes (see checkpoint_dtype.h).
#include "model/checkpoint_dtype.h"

#include "core/file.h"
#include "model/safetensors.h"

namespace trinity::model {

using tensor::DType;

DType stored_dtype(const std::string& model_dir) {
  const WeightSource ws = WeightSource::open_dir(model_dir);
  bool any = false, all_bf16 = true, all_f16 = true;
  for (const std::string& name : ws.names()) {
    const DType d = ws.get(name).dtype();
    any = true;
    all_bf16 = all_bf16 && d == DType::kBF16;
    all_f16 = all_f16 && d == DType::kF16;
  }
  if (any && all_bf16) return DType::kBF16;
  if (any && all_f16) return DType::kF16;
  return DType::kF32;
}

bool dtype_from_torch_name(const std::string& name, DType* out) {
  if (name == "float32")
    *out = DType::kF32;
  else if (name == "bfloat16")
    *out = DType::kBF16;
  else if (name == "float16")
    *out = DType::kF16;
  else
    return false;
  return true;
}

const char* torch_dtype_name(DType d) {
  return d == DType::kBF16 ? "bfloat16" : d == DType::kF16 ? "float16" : "float32";
}

std::string exact_weights_dir(const std::string& step_dir) {
  const std::string actor = file::join(step_dir, "actor");
  return file::exists(file::join(actor, "config.json")) ? actor : file::join(step_dir, "huggingface");
}

}  // namespace trinity::model
