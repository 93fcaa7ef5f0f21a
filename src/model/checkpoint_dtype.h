// Checkpoint dtypes: trinity trains fp32 master weights, but exports the HF checkpoint in the base
// model's dtype (a bf16 model stays bf16 on disk, half the size of fp32) unless configured otherwise
// (trainer.save_hf_dtype). A trainer checkpoint whose huggingface/ export is not fp32 also keeps the
// exact fp32 weights in global_step_N/actor/ (an HF directory of its own), so resuming and weight
// sync stay bitwise; exact_weights_dir() is where every reader of a step's weights looks.
#pragma once

#include <string>

#include "tensor/tensor.h"

namespace trinity::model {

// The dtype of a model directory's stored parameters: BF16 or F16 when every floating-point
// tensor of its safetensors has that dtype, else F32. IoError as WeightSource::open_dir.
tensor::DType stored_dtype(const std::string& model_dir);

// "float32" / "bfloat16" / "float16" (torch_dtype spelling) <-> DType; false for another name.
bool dtype_from_torch_name(const std::string& name, tensor::DType* out);
const char* torch_dtype_name(tensor::DType d);

// <step_dir>/actor when it holds an HF checkpoint (config.json), else <step_dir>/huggingface: the
// fp32 weights of a global_step_N directory (full checkpoint or sync-only).
std::string exact_weights_dir(const std::string& step_dir);

}  // namespace trinity::model
