// `trinity bench --config X [--set key=value ...]`: evaluates the config's last stage (the config
// itself without `stages:`) in bench mode: the base model (when explorer.eval_on_startup, the default,
// or when there is no checkpoint), then every saved checkpoint (global_step_N/huggingface; only the
// newest with explorer.bench_on_latest_checkpoint) of its job dir, on the eval tasksets; prints the
// eval metrics per checkpoint. The config is re-loaded with mode=bench (stages.<last>.mode=bench) because derived
// values depend on the mode. For a later stage, the base model is the previous stage's final
// checkpoint when stage_meta.json records it (as `trinity run` chains stages). With model.external_model
// the API's model is evaluated once instead (no local weights).
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/name_check.h"
#include "cli/stage_util.h"
#include "config/config.h"
#include "core/error.h"
#include "core/signals.h"
#include "launcher/launcher.h"

namespace trinity::cli {

namespace {

// Eval metrics worth printing: the per-taskset means (not timings).
bool shown(const std::string& k) { return k.find("/mean@") != std::string::npos && k.rfind("time/", 0) != 0; }

}  // namespace

int cmd_bench(const Argv& argv) {
  const Args a("bench", argv, {"config", "set"});
  const std::string path = a.str("config");
  std::vector<std::string> sets = a.all("set");
  const size_t n_stages = config::load_config(path, sets).stages.size();
  sets.push_back(n_stages == 0 ? std::string("mode=bench") : strcat("stages.", n_stages - 1, ".mode=bench"));
  const config::LoadResult r = config::load_config(path, sets);
  check_workflow_names(r);
  for (const auto& w : r.warnings) std::fprintf(stderr, "trinity: warning: %s\n", w.c_str());
  std::string note;
  const config::Config c = r.stages.empty() ? r.config : stage_with_chained_model(r, r.stages.size() - 1, &note);
  if (!note.empty()) std::fprintf(stderr, "trinity: bench: %s\n", note.c_str());
  StopSignals signals("stopping after the current evaluation");
  const launcher::StageSummary s = launcher::run_stage(c, signals.flag());

  std::printf("bench of %s (%s): %zu evaluation%s in %.1f s\n", s.name.c_str(), s.job_dir.c_str(), s.evals.size(),
              s.evals.size() == 1 ? "" : "s", s.seconds);
  for (const auto& [version, metrics] : s.evals) {
    const std::string what = !s.external_model.empty() ? " (external model " + s.external_model + ")"
                             : version == 0            ? " (base model)"
                                                       : "";
    std::printf("step %lld%s\n", static_cast<long long>(version), what.c_str());
    for (const auto& [k, v] : metrics)
      if (shown(k)) std::printf("  %-56s %.4f\n", k.c_str(), v);
  }
  if (signals.stopped()) {
    std::fprintf(stderr, "trinity: bench stopped before every checkpoint was evaluated\n");
    return 130;
  }
  return 0;
}

}  // namespace trinity::cli
