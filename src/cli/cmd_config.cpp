// `trinity config check --config X [--set key.path=value ...]`: loads the config exactly as a run
// would (overrides, interpolation, Trinity's derived values, stages) and prints the resolved YAML and
// each warning once. Errors propagate to main() (exit 1).
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/config.h"

namespace trinity::cli {

int cmd_config_check(const Argv& argv) {
  const Args a("config check", argv, {"config", "set"});
  const config::LoadResult r = config::load_config(a.str("config"), a.all("set"));
  std::fputs(config::to_yaml(r.config).c_str(), stdout);
  for (const auto& s : r.stages) {
    std::printf("---\n# stage %s\n", s.name.c_str());
    std::fputs(config::to_yaml(s).c_str(), stdout);
  }
  for (const auto& w : r.warnings) std::fprintf(stderr, "trinity: warning: %s\n", w.c_str());
  std::fprintf(stderr, "trinity: config %s is valid (%zu warning%s)\n", a.str("config").c_str(), r.warnings.size(),
               r.warnings.size() == 1 ? "" : "s");
  return 0;
}

}  // namespace trinity::cli
