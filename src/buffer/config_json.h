// Fills the buffer config structs from a nlohmann::json object (the YAML config layer converts YAML to
// JSON first). `path` is the dotted location of the object ("buffer.trainer_input.experience_buffer")
// and prefixes every message. Unknown keys are collected into *unknown as full paths when it is given,
// otherwise the first one throws ConfigError listing the valid keys. Known Trinity keys that mean
// nothing here (Ray / tokenizer specifics) are accepted with a warning. Wrong types throw ConfigError.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "buffer/config.h"

namespace trinity::buffer {

void storage_config_from_json(const nlohmann::json& j, StorageConfig& out, const std::string& path,
                              std::vector<std::string>* unknown = nullptr);
void taskset_config_from_json(const nlohmann::json& j, TasksetConfig& out, const std::string& path,
                              std::vector<std::string>* unknown = nullptr);
void format_config_from_json(const nlohmann::json& j, FormatConfig& out, const std::string& path,
                             std::vector<std::string>* unknown = nullptr);

}  // namespace trinity::buffer
