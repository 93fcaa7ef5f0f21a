// safetensors IO. Reading memory-maps the file and returns views (F32/BF16/F16); sharded
// checkpoints are read through model.safetensors.index.json. Writing is atomic (temp + rename).
// Every error is an IoError naming the file and, where relevant, the tensor.
// Format: 8-byte little-endian header length N, N bytes of JSON {name: {dtype, shape,
// data_offsets: [begin, end]}, "__metadata__": {...}}, then the data block.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace trinity::model {

// One safetensors file, memory-mapped. Tensors are views kept alive by the mapping.
class SafetensorsFile {
 public:
  static SafetensorsFile open(const std::string& path);
  const std::string& path() const { return path_; }
  std::vector<std::string> names() const;  // sorted
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  // Throws IoError "[safetensors] <path>: no tensor '<name>'" when missing.
  const tensor::Tensor& get(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::string path_;
  std::map<std::string, tensor::Tensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

// All tensors of a model directory: model.safetensors, or the shards listed by
// model.safetensors.index.json (a missing shard is an error naming it).
class WeightSource {
 public:
  static WeightSource open_dir(const std::string& model_dir);
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const;
  // The tensor converted to F32, checked against the expected shape:
  // "[safetensors] <file>: tensor '<name>' has shape [a, b], expected [c, d]".
  tensor::Tensor get_f32(const std::string& name, const std::vector<int64_t>& shape) const;
  // The same checks (present, shape) without reading the data: a checkpoint is validated against its
  // config.json before the model's memory is allocated.
  void check_shape(const std::string& name, const std::vector<int64_t>& shape) const;
  const tensor::Tensor& get(const std::string& name) const;
  std::string file_of(const std::string& name) const;

 private:
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, size_t> where_;
  std::string dir_;
};

// Writes tensors (converted to `dtype`, F32 or BF16) to one safetensors file, atomically.
struct NamedTensor {
  std::string name;
  const tensor::Tensor* tensor;
  // When set, write_safetensors writes make()'s tensor instead (called once, when this tensor's bytes
  // are written, so a computed tensor costs one at a time); `tensor` still gives the shape.
  std::function<tensor::Tensor()> make = nullptr;
};
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       tensor::DType dtype,
                       const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

}  // namespace trinity::model
