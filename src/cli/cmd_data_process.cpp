// `trinity data process --config X.yaml [--set key=value ...] [--force]`: runs the config's
// data_processor.task_pipeline (the first stage that has one) on its own, with the same code and
// output as `trinity run` (launcher/task_pipeline_run.h): <output>/output.jsonl and
// <output>/task_pipeline_report.json, the report also printed. --force replaces an existing output.
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "launcher/launcher.h"
#include "launcher/task_pipeline_run.h"

namespace trinity::cli {

int cmd_data_process(const Argv& argv) {
  const Args a("data process", argv, {"config", "set", "force!"});
  const config::LoadResult r = config::load_config(a.str("config"), a.all("set"));
  const config::Config* c = r.config.data_processor.task_pipeline ? &r.config : nullptr;
  for (const auto& s : r.stages)
    if (!c && s.data_processor.task_pipeline) c = &s;
  if (!c)
    throw ConfigError("data process", strcat(a.str("config"), " has no data_processor.task_pipeline (in the config or ",
                                             "any stage); see docs/data.md"));
  const config::Config resolved = launcher::resolve_hub_models(*c);
  const launcher::TaskPipelineRun run = launcher::run_task_pipeline(resolved, a.flag("force"));
  if (run.reused) {
    std::printf("%s is up to date (same inputs and config); --force processes it again\n", run.output_file.c_str());
    return 0;
  }
  std::printf("%s", run.report.to_text().c_str());
  std::printf("wrote %s (%lld rows) and %s/task_pipeline_report.json\n", run.output_file.c_str(),
              static_cast<long long>(run.report.rows_out), run.output_dir.c_str());
  return 0;
}

}  // namespace trinity::cli
