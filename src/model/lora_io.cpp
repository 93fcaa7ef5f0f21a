// PEFT adapter directories (model/lora.h): adapter_config.json + adapter_model.safetensors with
// PEFT's tensor names, read and written as peft's save_pretrained / from_pretrained do.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file.h"
#include "model/lora.h"
#include "model/safetensors.h"
#include "model/transformer.h"

namespace trinity::model {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

[[noreturn]] void unsupported(const std::string& path, const std::string& key, const std::string& what) {
  throw UnsupportedError("lora",
                         strcat(path, ": ", key, " (", what, ") is not supported; trinity reads plain LoRA adapters"));
}

bool truthy(const json& j) {
  return !j.is_null() && !(j.is_boolean() && !j.get<bool>());
}

bool non_empty(const json& j) {
  return !j.is_null() && !((j.is_object() || j.is_array()) && j.empty());
}

}  // namespace

bool is_adapter_dir(const std::string& dir) {
  return file::exists(file::join(dir, kAdapterConfigFile)) && file::exists(file::join(dir, kAdapterWeightsFile));
}

LoraConfig read_adapter_config(const std::string& dir) {
  const std::string path = file::join(dir, kAdapterConfigFile);
  if (!file::exists(path))
    throw IoError("lora", strcat(dir, ": not a PEFT adapter directory (no ", kAdapterConfigFile, ")"));
  const json j = json::parse(file::read_all(path), nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw IoError("lora", strcat(path, ": not a JSON object"));
  try {
    const std::string type = j.value("peft_type", "LORA");
    if (type != "LORA") unsupported(path, "peft_type", type);
    if (truthy(j.value("use_dora", json(false)))) unsupported(path, "use_dora", "DoRA");
    if (truthy(j.value("use_rslora", json(false)))) unsupported(path, "use_rslora", "rank-stabilised scaling");
    if (truthy(j.value("fan_in_fan_out", json(false)))) unsupported(path, "fan_in_fan_out", "Conv1D layout");
    for (const char* k : {"rank_pattern", "alpha_pattern", "modules_to_save", "layers_to_transform"})
      if (j.contains(k) && non_empty(j[k])) unsupported(path, k, j[k].dump());
    if (j.value("bias", std::string("none")) != "none") unsupported(path, "bias", j["bias"].dump());
    LoraConfig c;
    c.rank = j.at("r").get<int64_t>();
    c.alpha = j.value("lora_alpha", static_cast<double>(c.rank));
    c.dropout = j.value("lora_dropout", 0.0);
    c.target_modules.clear();
    const json& tm = j.at("target_modules");
    if (tm.is_string()) {
      c.target_modules.push_back(tm.get<std::string>());
    } else {
      for (const auto& m : tm) c.target_modules.push_back(m.get<std::string>());
    }
    if (j.contains("exclude_modules") && j["exclude_modules"].is_array())
      for (const auto& m : j["exclude_modules"]) c.exclude_modules.push_back(m.get<std::string>());
    c.validate();
    return c;
  } catch (const json::exception& e) {
    throw IoError("lora", strcat(path, ": ", e.what()));
  }
}

void save_adapter(const Transformer& m, const std::string& dir, const std::string& base_model) {
  if (!m.has_lora())
    throw ValueError("lora", strcat("cannot save an adapter to ", dir, ": the model has no LoRA adapters"));
  const LoraConfig& c = m.lora_config();
  const auto on = c.targets();
  json targets = json::array();
  for (int t = 0; t < kLoraTargets; ++t)
    if (on[static_cast<size_t>(t)]) targets.push_back(lora_module_name(t));
  const json cfg = {{"peft_type", "LORA"},
                    {"task_type", "CAUSAL_LM"},
                    {"base_model_name_or_path", base_model},
                    {"r", c.rank},
                    {"lora_alpha", c.alpha},
                    {"lora_dropout", c.dropout},
                    {"target_modules", targets},
                    {"bias", "none"},
                    {"fan_in_fan_out", false},
                    {"inference_mode", true},
                    {"init_lora_weights", true},
                    {"modules_to_save", nullptr},
                    {"layers_to_transform", nullptr},
                    {"layers_pattern", nullptr},
                    {"rank_pattern", json::object()},
                    {"alpha_pattern", json::object()},
                    {"use_rslora", false},
                    {"use_dora", false},
                    {"revision", nullptr}};
  const std::string tmp = strcat(dir, ".tmp.", ::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  file::make_dirs(tmp);
  try {
    file::write_atomic(file::join(tmp, kAdapterConfigFile), cfg.dump(2));
    const auto views = m.lora_tensors();
    std::vector<NamedTensor> named;
    for (size_t k = 0; k < views.size(); ++k) named.push_back({m.lora_specs()[k].name, &views[k]});
    write_safetensors(file::join(tmp, kAdapterWeightsFile), named, tensor::DType::kF32);
    if (file::exists(dir)) {
      if (!is_adapter_dir(dir) && !fs::is_empty(dir))
        throw IoError("lora", strcat("refusing to replace ", dir, ": it exists and is not an adapter directory"));
      fs::remove_all(dir);
    }
    fs::rename(tmp, dir);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
}

void load_adapter(Transformer& m, const std::string& dir) {
  const LoraConfig c = read_adapter_config(dir);
  const std::string wpath = file::join(dir, kAdapterWeightsFile);
  if (!file::exists(wpath)) throw IoError("lora", strcat(dir, ": no ", kAdapterWeightsFile));
  const auto f = SafetensorsFile::open(wpath);
  m.add_lora(c, 0);
  for (const ParamSpec& s : m.lora_specs()) {
    // PEFT saves without the adapter name; a file saved with it ("lora_A.default.weight") is read too.
    std::string name = s.name;
    if (!f.contains(name)) {
      std::string alt = name;
      alt.insert(alt.rfind(".weight"), ".default");
      if (!f.contains(alt))
        throw IoError("lora", strcat(wpath, ": no tensor '", name,
                                     "' (adapter_config.json's target_modules say this module is adapted)"));
      name = alt;
    }
    const auto& t = f.get(name);
    if (t.shape() != s.shape) {
      std::string got, want;
      for (auto d : t.shape()) got += (got.empty() ? "" : ", ") + std::to_string(d);
      for (auto d : s.shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
      throw IoError("lora", strcat(wpath, ": tensor '", name, "' has shape [", got, "], expected [", want, "] (rank ",
                                   c.rank, " on this base model)"));
    }
    const tensor::Tensor w = t.to_f32();
    std::memcpy(m.lora_param(s.name), w.f32(), static_cast<size_t>(w.nbytes()));
  }
}

}  // namespace trinity::model
