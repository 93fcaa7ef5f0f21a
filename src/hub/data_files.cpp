// Dataset repo files by subset and split, as datasets.load_dataset resolves them (see data_files.h).
#include "hub/data_files.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
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

using SplitPatterns = std::vector<std::pair<std::string, std::vector<std::string>>>;  // split -> patterns, in order

struct ConfigSpec {
  std::string name, data_dir;
  bool is_default = false;
  SplitPatterns data_files;  // empty: the default patterns (inside data_dir)
};

const std::vector<std::pair<std::string, std::vector<std::string>>>& split_keywords() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> k = {
      {"train", {"train", "training"}},
      {"validation", {"validation", "valid", "dev", "val"}},
      {"test", {"test", "testing", "eval", "evaluation"}}};
  return k;
}

std::string lower_ext(const std::string& p) {
  std::string e = fs::path(p).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return e;
}

// The loader ("module") of a file: parquet, json (.json / .jsonl) or csv; "" = not a data file.
std::string module_of(const std::string& p) {
  const std::string e = lower_ext(p);
  if (e == ".parquet") return "parquet";
  if (e == ".json" || e == ".jsonl") return "json";
  if (e == ".csv") return "csv";
  return "";
}

bool hidden(const std::string& path) {
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string part = path.substr(start, end - start);
    if (part.rfind(".", 0) == 0 || part.rfind("__", 0) == 0) return true;
    start = end + 1;
  }
  return false;
}

std::regex glob_regex(const std::string& pattern) {
  std::string re;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '*') {
      if (i + 1 < pattern.size() && pattern[i + 1] == '*') {
        ++i;
        if (i + 1 < pattern.size() && pattern[i + 1] == '/') {
          ++i;
          re += "(?:.*/)?";  // "**/": zero or more folders
        } else {
          re += ".*";
        }
      } else {
        re += "[^/]*";
      }
    } else if (c == '?') {
      re += "[^/]";
    } else if (c == '[') {
      const size_t close = pattern.find(']', i + 2);
      if (close == std::string::npos) {
        re += "\\[";
        continue;
      }
      std::string cls = pattern.substr(i + 1, close - i - 1);
      if (!cls.empty() && cls[0] == '!') cls[0] = '^';
      std::string esc;
      for (char k : cls) {
        if (k == '\\' || k == ']' || k == '[') esc += '\\';
        esc += k;
      }
      re += "[" + esc + "]";
      i = close;
    } else if (std::string("\\^$.|+(){}").find(c) != std::string::npos) {
      re += '\\';
      re += c;
    } else {
      re += c;
    }
  }
  return std::regex(re);
}

// Data files (supported type, not hidden) matching the patterns, each pattern's matches sorted,
// in pattern order, without repeats.
std::vector<std::string> resolve_patterns(const std::vector<std::string>& files,
                                          const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& p : patterns) {
    const std::regex re = glob_regex(p);
    const bool pattern_hidden = hidden(p);
    for (const auto& f : files) {  // `files` is sorted
      if (module_of(f).empty() || (!pattern_hidden && hidden(f))) continue;
      if (std::regex_match(f, re) && seen.insert(f).second) out.push_back(f);
    }
  }
  return out;
}

// datasets.data_files.get_data_patterns over `files` (paths relative to the base folder).
SplitPatterns default_patterns(const std::vector<std::string>& files) {
  // data/{split}-00000-of-00001*.*: the split names come from the file names.
  static const std::regex sharded(R"(data/(\w+(?:\.\w+)*)-[0-9]{5}-of-[0-9]{5}[^/]*\.[^/]*)");
  std::vector<std::string> splits;
  for (const auto& f : files) {
    std::smatch m;
    if (!module_of(f).empty() && !hidden(f) && std::regex_match(f, m, sharded) &&
        std::find(splits.begin(), splits.end(), m[1].str()) == splits.end())
      splits.push_back(m[1].str());
  }
  if (!splits.empty()) {
    SplitPatterns out;
    for (const auto& s : splits)
      out.push_back({s, {"data/" + s + "-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9]*.*"}});
    return out;
  }
  const std::string sep = "[-._ 0-9]", sep_slash = "[-._ 0-9/]";
  const std::vector<std::vector<std::string>> base = {
      // keywords as folder names, then in file names
      {"{k}/**", "**" + sep_slash + "{k}/**", "{k}" + sep + "*/**", "**" + sep_slash + "{k}" + sep + "*/**"},
      {"**" + sep_slash + "{k}" + sep + "*", "{k}" + sep + "*"}};
  for (const auto& group : base) {
    SplitPatterns out;
    for (const auto& [split, keywords] : split_keywords()) {
      std::vector<std::string> pats;
      for (const auto& k : keywords)
        for (std::string p : group) {
          for (size_t at; (at = p.find("{k}")) != std::string::npos;) p.replace(at, 3, k);
          pats.push_back(p);
        }
      if (!resolve_patterns(files, pats).empty()) out.push_back({split, pats});
    }
    if (!out.empty()) return out;
  }
  return {{"train", {"**"}}};
}

std::vector<std::string> yaml_strings(const YAML::Node& n) {
  std::vector<std::string> out;
  if (n.IsScalar())
    out.push_back(n.as<std::string>());
  else if (n.IsSequence())
    for (const auto& x : n) out.push_back(x.as<std::string>());
  return out;
}

// README.md front matter `configs:`; empty when there is none.
std::vector<ConfigSpec> readme_configs(const std::string& readme, const std::string& repo_id) {
  std::vector<ConfigSpec> out;
  if (readme.rfind("---", 0) != 0) return out;
  const size_t body = readme.find('\n');
  if (body == std::string::npos) return out;
  size_t end = readme.find("\n---", body);
  if (end == std::string::npos) return out;
  const std::string yaml = readme.substr(body + 1, end - body);
  try {
    const YAML::Node root = YAML::Load(yaml);
    const YAML::Node configs = root["configs"];
    if (!configs || !configs.IsSequence()) return out;
    for (const auto& c : configs) {
      ConfigSpec s;
      s.name = c["config_name"] ? c["config_name"].as<std::string>() : "default";
      s.is_default = c["default"] && c["default"].as<bool>();
      if (c["data_dir"]) s.data_dir = c["data_dir"].as<std::string>();
      const YAML::Node df = c["data_files"];
      if (df && (df.IsScalar() || (df.IsSequence() && df.size() > 0 && df[0].IsScalar()))) {
        s.data_files.push_back({"train", yaml_strings(df)});
      } else if (df && df.IsSequence()) {
        for (const auto& e : df)
          s.data_files.push_back({e["split"] ? e["split"].as<std::string>() : "train", yaml_strings(e["path"])});
      } else if (df && df.IsMap()) {
        for (const auto& kv : df) s.data_files.push_back({kv.first.as<std::string>(), yaml_strings(kv.second)});
      }
      out.push_back(std::move(s));
    }
  } catch (const YAML::Exception& e) {
    throw ConfigError("hub",
                      strcat("dataset ", repo_id, ": README.md front matter is not valid YAML (", e.what(), ")"));
  }
  return out;
}

std::string join_names(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

bool glob_match(const std::string& pattern, const std::string& path) {
  return std::regex_match(path, glob_regex(pattern));
}

std::vector<std::string> select_data_files(const std::vector<std::string>& repo_files_in, const std::string& readme,
                                           const std::string& subset, const std::string& split,
                                           const std::string& repo_id) {
  std::vector<std::string> repo_files = repo_files_in;
  std::sort(repo_files.begin(), repo_files.end());
  const std::vector<ConfigSpec> configs = readme_configs(readme, repo_id);
  std::string base;  // folder the patterns are relative to
  SplitPatterns patterns;
  std::string where = "dataset " + repo_id;
  if (!configs.empty()) {
    const ConfigSpec* pick = nullptr;
    std::vector<std::string> names;
    for (const auto& c : configs) names.push_back(c.name);
    if (!subset.empty()) {
      for (const auto& c : configs)
        if (c.name == subset) pick = &c;
      if (!pick)
        throw ConfigError("hub", strcat(where, ": no config (subset_name) '", subset,
                                        "' in README.md; configs: ", join_names(names)));
    } else {
      for (const auto& c : configs)
        if (c.is_default && !pick) pick = &c;
      for (const auto& c : configs)
        if (c.name == "default" && !pick) pick = &c;
      if (!pick && configs.size() == 1) pick = &configs[0];
      if (!pick)
        throw ConfigError(
            "hub", strcat(where, ": subset_name is required (README.md has several configs and none is the default): ",
                          join_names(names)));
    }
    where += " (config " + pick->name + ")";
    base = pick->data_dir;
    patterns = pick->data_files;
  } else if (!subset.empty()) {
    base = subset;
  }
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.rfind("./", 0) == 0) base = base.substr(2);
  std::vector<std::string> rel;  // paths under `base`, relative to it
  for (const auto& f : repo_files) {
    if (base.empty())
      rel.push_back(f);
    else if (f.size() > base.size() + 1 && f.compare(0, base.size() + 1, base + "/") == 0)
      rel.push_back(f.substr(base.size() + 1));
  }
  if (!base.empty() && configs.empty() && rel.empty())
    throw ConfigError("hub", strcat(where, ": subset_name '", subset, "': no folder '", subset,
                                    "/' and README.md declares no configs"));
  if (patterns.empty()) patterns = default_patterns(rel);
  // Each split's files; then one format for all of them (datasets infers one builder).
  std::vector<std::pair<std::string, std::vector<std::string>>> resolved;
  std::map<std::string, int> counts;
  for (const auto& [s, pats] : patterns) {
    auto files = resolve_patterns(rel, pats);
    for (const auto& f : files) counts[module_of(f)]++;
    resolved.push_back({s, std::move(files)});
  }
  std::string module;
  int best = 0;
  for (const char* m : {"parquet", "json", "csv"})
    if (counts[m] > best) best = counts[m], module = m;
  std::vector<std::string> split_names;
  for (const auto& [s, files] : resolved) {
    split_names.push_back(s);
    if (s != split) continue;
    std::vector<std::string> out;
    for (const auto& f : files)
      if (module_of(f) == module) out.push_back(base.empty() ? f : base + "/" + f);
    if (out.empty())
      throw ConfigError("hub",
                        strcat(where, ": no data files (.parquet, .json, .jsonl, .csv) for split '", split, "'"));
    return out;
  }
  throw ConfigError("hub", strcat(where, ": no split '", split, "'; splits: ", join_names(split_names)));
}

std::vector<std::string> resolve_dataset_files(const std::string& path_or_id, const std::string& split,
                                               const std::string& subset) {
  std::error_code ec;
  if (path_or_id.empty() || fs::exists(path_or_id, ec)) return {};
  const auto ref = parse_repo_id(path_or_id, RepoType::kDataset);
  if (!ref) return {};
  const HubClient client(HubEnv::from_environment());
  auto offline = [&](const std::string& why) {
    const std::string commit = client.cached_commit(*ref, why);
    const RepoCache c = client.cache(*ref);
    const auto readme = c.cached_file(commit, "README.md");
    std::vector<std::string> rel;
    try {
      rel = select_data_files(c.snapshot_files(commit), readme ? file::read_all(*readme) : "", subset, split, ref->id);
    } catch (const ConfigError& e) {
      client.throw_offline_missing(*ref, commit, {strcat("the files of split '", split, "'")},
                                   strcat(why, "; ", e.what()));
    }
    std::vector<std::string> out;
    for (const auto& f : rel) out.push_back(file::join(c.snapshot_dir(commit), f));
    return out;
  };
  if (client.env().datasets_offline) return offline("HF_HUB_OFFLINE / HF_DATASETS_OFFLINE is set");
  RepoListing listing;
  try {
    listing = client.list(*ref);
  } catch (const NetworkError& e) {
    if (!client.cache(*ref).commit_for(ref->revision)) throw;
    log::warn("dataset ", ref->id, ": the Hub is unreachable (", e.what(), "); using the cache");
    return offline("the Hub is unreachable");
  }
  std::vector<std::string> names;
  for (const auto& f : listing.files) names.push_back(f.path);
  const std::string readme =
      listing.has("README.md") ? file::read_all(client.download(*ref, listing.commit, "README.md")) : "";
  std::vector<std::string> out;
  for (const auto& f : select_data_files(names, readme, subset, split, ref->id))
    out.push_back(client.download(*ref, listing.commit, f));
  client.record_ref(*ref, listing.commit);
  log::info(ref->describe(), " split ", split, subset.empty() ? "" : " subset " + subset, ": ", out.size(),
            " file(s) in ", client.cache(*ref).snapshot_dir(listing.commit));
  return out;
}

std::string describe_dataset(const std::string& path_or_id) {
  std::error_code ec;
  if (path_or_id.empty()) return "";
  if (fs::exists(path_or_id, ec)) return "local";
  const auto ref = parse_repo_id(path_or_id, RepoType::kDataset);
  if (!ref) return "";
  const HubClient client(HubEnv::from_environment());
  const RepoCache c = client.cache(*ref);
  if (auto commit = c.commit_for(ref->revision))
    return strcat("Hub ", ref->describe(), ": cached (snapshot ", c.snapshot_dir(*commit), ")");
  if (client.env().datasets_offline)
    return strcat("Hub ", ref->describe(), ": not cached in ", c.repo_dir(),
                  " and offline mode is set: the run will fail");
  return strcat("Hub ", ref->describe(), ": not cached; would be downloaded from ", client.env().endpoint, " into ",
                c.repo_dir());
}

}  // namespace trinity::hub
