// Model directories from Hub ids: `model_path: Qwen/Qwen2.5-1.5B-Instruct` (or `Org/Name@revision`)
// becomes the snapshot folder of the files trinity reads (config.json, generation_config.json, the
// tokenizer files, chat_template.jinja/.json, model.safetensors or the index and its shards), found
// in the Hub cache or downloaded into it. An existing local path is returned unchanged; so is a
// string that is not shaped like a repo id (the loaders then report it as a missing directory).
#pragma once

#include <string>
#include <vector>

namespace trinity::hub {

// The files of a model repo trinity downloads, given the repo's file list and, when the repo has
// model.safetensors.index.json, that file's text (its weight_map names the shards).
std::vector<std::string> model_files(const std::vector<std::string>& repo_files, const std::string& index_json,
                                     bool with_weights = true);

// A local directory for `path_or_id` (see the file comment). `key` names the setting in messages
// ("model.model_path"). Throws IoError (offline and not cached, gated, not found, ...).
// `with_weights` false: the tokenizer files only (`trinity tokenize --tokenizer`).
std::string resolve_model_dir(const std::string& path_or_id, const std::string& key = "model path",
                              bool with_weights = true);

// Without any network access: "local", "cached (snapshot <dir>)" or "not cached: would be
// downloaded from <endpoint> into <cache>" -- for `trinity config check`. "" when `path_or_id` is
// neither an existing path nor a repo id.
std::string describe_model(const std::string& path_or_id);

}  // namespace trinity::hub
