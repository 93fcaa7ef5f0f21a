// Internal to src/config: typed reading of one mapping of the config tree. Every get marks the key as
// known; finish() turns any other key into a ConfigError with file:line and a "did you mean". Keys
// Trinity has but trinity ignores are accepted with one warning each (Ctx collects warnings, each
// once). Parsed carries the Config plus which values the user set, for the derivation step.
#pragma once

#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/tree.h"

namespace trinity::config::detail {

struct Source {
  Tree root;         // after --set and interpolation (stages included)
  std::string file;  // label for messages
  std::string dir;   // base of relative paths
};

struct Ctx {
  std::string file;
  std::string dir;
  std::vector<std::string> warnings;
  void warn(const std::string& msg);
  [[noreturn]] void fail(const Tree& at, const std::string& msg) const;  // "<loc>: msg"
  std::string loc(const Tree& at) const { return tree_location(at, file); }
};

// Scalar conversions; throw "<loc>: <path>: expected an integer, got 'abc'".
int64_t as_i64(const Ctx& c, const Tree& t, const std::string& path);
double as_f64(const Ctx& c, const Tree& t, const std::string& path);
bool as_bool(const Ctx& c, const Tree& t, const std::string& path);
std::string as_str(const Ctx& c, const Tree& t, const std::string& path);

class Section {
 public:
  // `t` may be null or a null node (section absent: every read keeps its default).
  Section(Ctx& c, const Tree* t, std::string path);
  std::string at(const std::string& k) const { return path_.empty() ? k : path_ + "." + k; }
  const Tree* node() const { return t_; }
  const Tree* get(const std::string& k);  // null when absent or null
  void str(const std::string& k, std::string& out);
  void i64(const std::string& k, int64_t& out);
  void f64(const std::string& k, double& out);
  void boolean(const std::string& k, bool& out);
  template <typename T>
  void opt(const std::string& k, std::optional<T>& out);
  void warn_ignored(std::initializer_list<const char*> keys, const std::string& why = "");
  void finish();

 private:
  Ctx& c_;
  const Tree* t_;
  std::string path_;
  std::vector<std::string> known_;
};
template <> void Section::opt<int64_t>(const std::string& k, std::optional<int64_t>& out);
template <> void Section::opt<double>(const std::string& k, std::optional<double>& out);
template <> void Section::opt<bool>(const std::string& k, std::optional<bool>& out);
template <> void Section::opt<std::string>(const std::string& k, std::optional<std::string>& out);

// What the user wrote where a derived value depends on presence.
struct Sampling {
  std::optional<double> temperature, top_p, repetition_penalty;
  std::optional<int64_t> top_k, logprobs, max_model_len, max_prompt_tokens, max_response_tokens,
      min_response_tokens;
  std::optional<bool> enable_prompt_truncation;
};

struct Parsed {
  Config cfg;
  std::optional<int64_t> max_model_len, max_prompt_tokens, max_response_tokens;
  Sampling rollout;
  std::vector<Sampling> aux;
  std::optional<int64_t> train_batch_size;
  std::optional<std::string> sync_method;
  std::optional<int64_t> max_token_len_per_gpu;
  bool experience_schema_set = false;
  bool experience_buffer_set = false;
  std::set<std::string> aux_schema_set;
  bool critic_model_path_set = false;
};

// parse.cpp: tree -> Parsed (types, unknown keys, warnings; no derivation).
Parsed parse_tree(Ctx& c, const Tree& root);
void parse_buffer(Ctx& c, const Tree* t, Parsed& p);  // buffer_parse.cpp
// JSON text of a subtree (plain scalars typed as YAML 1.2 core: bool / int / float / string).
std::string tree_to_json_text(const Tree& t);
// verl_keys.cpp: trainer.trainer_config (verl keys) -> the trinity keys they correspond to; warnings
// for the rest. Runs after the sections are parsed (explicit trinity keys win).
void map_trainer_config(Ctx& c, const Tree& root, Parsed& p);
// derive.cpp: Trinity's "auto" values and cross-field checks.
void derive(Ctx& c, const Tree& root, Parsed& p);
// Why `name` cannot be a part of the job directory ("" when it can): '/'-separated parts, none empty,
// "." or "..", so checkpoint_root_dir/project/group/name never leaves checkpoint_root_dir.
std::string job_dir_name_problem(const std::string& name);
// Relative path -> absolute against dir (if `must_exist`, only when it exists there).
std::string resolve_path(const std::string& path, const std::string& dir, bool must_exist);

}  // namespace trinity::config::detail
