// Model directories from Hub ids (see model.h).
#include "hub/model.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/file.h"
#include "core/log.h"
#include "hub/client.h"
#include "hub/http.h"
#include "hub/repo.h"

namespace trinity::hub {

namespace fs = std::filesystem;

namespace {

// What the model, tokenizer and chat loaders read, and what a checkpoint copies along.
constexpr const char* kMetaFiles[] = {"config.json",           "generation_config.json",  "tokenizer.json",
                                      "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                                      "chat_template.jinja",   "chat_template.json"};
constexpr const char* kIndex = "model.safetensors.index.json";

std::vector<std::string> index_shards(const std::string& index_json, const std::string& where) {
  std::set<std::string> shards;
  try {
    const auto j = nlohmann::json::parse(index_json);
    for (const auto& [name, file] : j.at("weight_map").items())
      if (file.is_string()) shards.insert(file.get<std::string>());
  } catch (const nlohmann::json::exception& e) {
    throw IoError("hub", strcat(where, ": not a safetensors index (", e.what(), ")"));
  }
  return {shards.begin(), shards.end()};
}

bool top_level_safetensors(const std::string& f) {
  return f.find('/') == std::string::npos && f.size() > 12 && f.compare(f.size() - 12, 12, ".safetensors") == 0;
}

// Files an offline run needs from a cached snapshot; the missing ones.
std::vector<std::string> missing_offline(const RepoCache& c, const std::string& commit, bool with_weights) {
  std::vector<std::string> missing;
  auto need = [&](const std::string& f) {
    if (!c.cached_file(commit, f) && !c.marked_missing(commit, f)) missing.push_back(f);
  };
  need("tokenizer.json");
  if (!with_weights) return missing;
  if (!c.cached_file(commit, "config.json")) missing.push_back("config.json");
  if (auto idx = c.cached_file(commit, kIndex)) {
    for (const auto& s : index_shards(file::read_all(*idx), *idx))
      if (!c.cached_file(commit, s)) missing.push_back(s);
  } else {
    const auto files = c.snapshot_files(commit);
    if (std::none_of(files.begin(), files.end(), top_level_safetensors))
      missing.push_back("model.safetensors (or model.safetensors.index.json and its shards)");
  }
  return missing;
}

std::string resolve_offline(const HubClient& client, const RepoRef& ref, const std::string& key, bool with_weights,
                            const std::string& why) {
  const std::string commit = client.cached_commit(ref, strcat(key, ", ", why));
  const auto missing = missing_offline(client.cache(ref), commit, with_weights);
  if (!missing.empty()) client.throw_offline_missing(ref, commit, missing, strcat(key, ", ", why));
  return client.cache(ref).snapshot_dir(commit);
}

}  // namespace

std::vector<std::string> model_files(const std::vector<std::string>& repo_files, const std::string& index_json,
                                     bool with_weights) {
  const std::set<std::string> have(repo_files.begin(), repo_files.end());
  std::vector<std::string> out;
  for (const char* f : kMetaFiles)
    if (have.count(f)) out.push_back(f);
  if (!with_weights) return out;
  if (have.count(kIndex)) {
    out.push_back(kIndex);
    if (!index_json.empty())
      for (const auto& s : index_shards(index_json, kIndex)) out.push_back(s);
  } else if (have.count("model.safetensors")) {
    out.push_back("model.safetensors");
  } else {
    for (const auto& f : repo_files)
      if (top_level_safetensors(f)) out.push_back(f);
  }
  return out;
}

std::string resolve_model_dir(const std::string& path_or_id, const std::string& key, bool with_weights) {
  std::error_code ec;
  if (path_or_id.empty() || fs::exists(path_or_id, ec)) return path_or_id;
  const auto ref = parse_repo_id(path_or_id, RepoType::kModel);
  if (!ref) return path_or_id;
  const HubClient client(HubEnv::from_environment());
  if (client.env().offline) return resolve_offline(client, *ref, key, with_weights, "HF_HUB_OFFLINE is set");
  RepoListing listing;
  try {
    listing = client.list(*ref);
  } catch (const NetworkError& e) {
    if (!client.cache(*ref).commit_for(ref->revision)) throw;
    log::warn(key, ": the Hub is unreachable (", e.what(), "); using the cached ", ref->describe());
    return resolve_offline(client, *ref, key, with_weights, "the Hub is unreachable");
  }
  std::vector<std::string> names;
  for (const auto& f : listing.files) names.push_back(f.path);
  std::string index_text;
  if (with_weights && listing.has(kIndex)) index_text = file::read_all(client.download(*ref, listing.commit, kIndex));
  const auto want = model_files(names, index_text, with_weights);
  if (with_weights &&
      (std::find(want.begin(), want.end(), "config.json") == want.end() ||
       std::none_of(want.begin(), want.end(), [](const std::string& f) { return f.ends_with(".safetensors"); })))
    throw IoError("hub", strcat(key, ": ", ref->describe(), " has no config.json and *.safetensors weights at commit ",
                                listing.commit, " (trinity loads safetensors checkpoints of transformers models)"));
  for (const auto& f : want) client.download(*ref, listing.commit, f);
  client.record_ref(*ref, listing.commit);
  const std::string dir = client.cache(*ref).snapshot_dir(listing.commit);
  log::info(key, ": ", ref->describe(), " -> ", dir);
  return dir;
}

std::string describe_model(const std::string& path_or_id) {
  std::error_code ec;
  if (path_or_id.empty()) return "";
  if (fs::exists(path_or_id, ec)) return "local";
  const auto ref = parse_repo_id(path_or_id, RepoType::kModel);
  if (!ref) return "";
  const HubClient client(HubEnv::from_environment());
  const RepoCache c = client.cache(*ref);
  if (auto commit = c.commit_for(ref->revision)) {
    const auto missing = missing_offline(c, *commit, true);
    if (missing.empty()) return strcat("Hub ", ref->describe(), ": cached (snapshot ", c.snapshot_dir(*commit), ")");
    return strcat(
        "Hub ", ref->describe(), ": partly cached (snapshot ", c.snapshot_dir(*commit), "; missing ", missing.front(),
        missing.size() > 1 ? strcat(" and ", missing.size() - 1, " more") : "", ")",
        client.env().offline ? "; HF_HUB_OFFLINE is set: the run will fail" : "; the rest would be downloaded");
  }
  if (client.env().offline)
    return strcat("Hub ", ref->describe(), ": not cached in ", c.repo_dir(),
                  " and HF_HUB_OFFLINE is set: the run will fail");
  return strcat("Hub ", ref->describe(), ": not cached; would be downloaded from ", client.env().endpoint, " into ",
                c.repo_dir());
}

}  // namespace trinity::hub
