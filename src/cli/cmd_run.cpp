// `trinity run --config X [--set key=value ...]`: loads the config and runs every stage
// (src/launcher). SIGINT / SIGTERM ask for a clean stop (the trainer saves a resumable checkpoint,
// the explorer drops unfinished steps); a second signal exits at once. Ends with a summary on stdout
// (logs, progress and warnings stay on stderr, so `trinity run ... > summary.txt` keeps just it):
// eval reward before and after, time, where the checkpoint and the logs are.
#include <cstdio>

#include <filesystem>

#include "cli/args.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "cli/name_check.h"
#include "config/config.h"
#include "core/error.h"
#include "core/file.h"
#include "core/signals.h"
#include "dist/comm.h"
#include "launcher/dist_train.h"
#include "launcher/launcher.h"

namespace trinity::cli {

namespace {

// The first eval metric that looks like a reward: <prefix>/<set>/{reward,accuracy,...}/mean@k.
std::string main_metric(const std::map<std::string, double>& m) {
  for (const char* key : {"/reward/mean@", "/accuracy/mean@", "/score/mean@"})
    for (const auto& [k, v] : m)
      if (k.find(key) != std::string::npos) return k;
  return "";
}

void print_summary(const std::vector<launcher::StageSummary>& stages) {
  std::FILE* out = stdout;
  std::fprintf(out, "\n==== trinity run summary ====\n");
  for (const auto& s : stages) {
    std::fprintf(out, "stage %s (%s): %lld train steps, %lld explore steps, %.1f s%s\n", s.name.c_str(), s.mode.c_str(),
                 static_cast<long long>(s.train_steps), static_cast<long long>(s.explore_steps), s.seconds,
                 s.stopped ? " (stopped; run again to resume)" : "");
    if (!s.evals.empty()) {
      const std::string k = main_metric(s.evals.front().second);
      if (!k.empty()) {
        std::fprintf(out, "  %s:", k.c_str());
        for (const auto& [v, m] : s.evals) {
          auto it = m.find(k);
          if (it != m.end()) std::fprintf(out, " %.3f (v%lld)", it->second, static_cast<long long>(v));
        }
        std::fprintf(out, "\n");
        const auto& first = s.evals.front().second;
        const auto& last = s.evals.back().second;
        if (s.evals.size() > 1 && first.count(k) && last.count(k))
          std::fprintf(out, "  eval reward %.3f -> %.3f (%+.3f)\n", first.at(k), last.at(k), last.at(k) - first.at(k));
      }
    }
    if (!s.last_checkpoint.empty()) std::fprintf(out, "  checkpoint: %s\n", s.last_checkpoint.c_str());
    if (&s == &stages.back() && !s.last_checkpoint.empty())
      std::fprintf(out, "  chat with it: trinity serve --model %s\n", s.last_checkpoint.c_str());
    std::fprintf(out, "  metrics:    %s\n", file::join(s.job_dir, "monitor/metrics.jsonl").c_str());
  }
  std::fflush(out);
}

}  // namespace

int cmd_run(const Argv& argv) {
  const Args a("run", argv, {"config", "set"});
  const config::LoadResult r = config::load_config(a.str("config"), a.all("set"));
  check_workflow_names(r);
  // Under mpirun the ranks above 0 only train, led by rank 0 (docs/scaling.md).
  if (dist::launched_distributed() && dist::world().rank() > 0) {
    launcher::follow(dist::world(), r);
    return 0;
  }
  for (const auto& w : r.warnings) std::fprintf(stderr, "trinity: warning: %s\n", w.c_str());
  StopSignals signals("stopping after the current step");
  launcher::RunOrigin origin;  // for run_status.json: how to run it again (Studio's resume)
  origin.config_path = std::filesystem::absolute(a.str("config")).lexically_normal().string();
  origin.sets = a.all("set");
  origin.cwd = std::filesystem::current_path().string();
  origin.version = strcat(build::kVersion, " (", build::kCommit, ")");
  const auto stages = launcher::run(r, signals.flag(), &origin);
  print_summary(stages);
  return signals.stopped() ? 130 : 0;
}

}  // namespace trinity::cli
