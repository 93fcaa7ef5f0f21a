// `trinity config check --config X [--set key.path=value ...]`: loads the config exactly as a run
// would (overrides, interpolation, Trinity's derived values, stages) and prints the resolved YAML and
// each warning once, and for each Hugging Face Hub id among the model and dataset paths whether it
// is local, cached (which snapshot) or would be downloaded -- without touching the network.
// Errors propagate to main() (exit 1).
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/name_check.h"
#include "config/config.h"
#include "hub/data_files.h"
#include "hub/model.h"

namespace trinity::cli {

namespace {

// One stderr line per Hub id (local paths and other values say nothing).
void print_hub_status(const config::Config& c, const std::string& stage) {
  const std::string where = stage.empty() ? "" : "stage " + stage + ": ";
  auto model = [&](const std::string& key, const std::string& path) {
    const std::string s = hub::describe_model(path);
    if (!s.empty() && s != "local") std::fprintf(stderr, "trinity: %s%s: %s\n", where.c_str(), key.c_str(), s.c_str());
  };
  auto dataset = [&](const std::string& key, const std::string& path) {
    const std::string s = hub::describe_dataset(path);
    if (!s.empty() && s != "local") std::fprintf(stderr, "trinity: %s%s: %s\n", where.c_str(), key.c_str(), s.c_str());
  };
  model("model.model_path", c.model.model_path);
  if (c.model.critic_model_path != c.model.model_path) model("model.critic_model_path", c.model.critic_model_path);
  for (size_t i = 0; i < c.explorer.auxiliary_models.size(); ++i)
    model("explorer.auxiliary_models[" + std::to_string(i) + "].model_path", c.explorer.auxiliary_models[i].model_path);
  for (const auto& t : c.buffer.explorer_input.tasksets) dataset("taskset " + t.name, t.path);
  for (const auto& t : c.buffer.explorer_input.eval_tasksets) dataset("eval taskset " + t.name, t.path);
  const auto& eb = c.buffer.trainer_input.experience_buffer;
  if (eb.storage_type == "file" && (c.schema_type == "sft" || c.schema_type == "dpo"))
    dataset("experience_buffer " + eb.name, eb.path);
}

}  // namespace

int cmd_config_check(const Argv& argv) {
  const Args a("config check", argv, {"config", "set"});
  const config::LoadResult r = config::load_config(a.str("config"), a.all("set"));
  check_workflow_names(r);
  std::fputs(config::to_yaml(r.config).c_str(), stdout);
  for (const auto& s : r.stages) {
    std::printf("---\n# stage %s\n", s.name.c_str());
    std::fputs(config::to_yaml(s).c_str(), stdout);
  }
  print_hub_status(r.config, "");
  for (const auto& s : r.stages) print_hub_status(s, s.name);
  for (const auto& w : r.warnings) std::fprintf(stderr, "trinity: warning: %s\n", w.c_str());
  std::fprintf(stderr, "trinity: config %s is valid (%zu warning%s)\n", a.str("config").c_str(), r.warnings.size(),
               r.warnings.size() == 1 ? "" : "s");
  return 0;
}

}  // namespace trinity::cli
