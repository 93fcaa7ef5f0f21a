// command_workflow: an agent is a command (issue 12 §2, docs/agents.md). For each run the workflow
// opens a recording OpenAI endpoint on the rollout model (its own key and history), starts
// workflow_args.command in the config file's directory with
//   OPENAI_BASE_URL / OPENAI_API_BASE, OPENAI_API_KEY, TRINITY_MODEL, TRINITY_TASK (the row as JSON,
//   also written on stdin), TRINITY_RUN_ID (batch/task/run), TRINITY_REPEAT_INDEX, TRINITY_SEED,
//   plus workflow_args.env,
// and waits for it. The last stdout line that is a JSON object with a numeric "reward" is the
// result ({"reward": r, "metrics": {name: number}, "info": {...}}); every other line goes to the
// run's log file (RunContext::log_dir/<batch>-<task>-<run>.log, at most 16 MiB; without a log_dir, as
// in `trinity debug workflow`, to the log as info lines). The recorded calls
// become experiences by workflow/history.h, each with the run's reward and metrics.
// Runs of a task (repeat_times) run side by side. A run fails, and with it the attempt (which the
// runner retries), when the command cannot start, exits non-zero, is killed, exceeds
// workflow_args.timeout (its process group is killed), prints no reward, or made no model call;
// the error starts with "[agent] <reason>:" (start, exit, signal, timeout, no_reward, no_calls),
// which the explorer counts as failure class agent_<reason>.
// workflow_args: command (list of strings, required; a string runs with /bin/sh -c), timeout
// (seconds per run, 0 = only the runner's max_timeout), env (object of strings).
#pragma once

#include "workflow/workflow.h"

namespace trinity::workflow {

// Metric key of the calls per run that extended no earlier call (history.h), logged by the
// explorer as the step's sum rollout/agent/inconsistent_history_count.
inline constexpr const char* kInconsistentHistoryMetric = "agent/inconsistent_history_count";

}  // namespace trinity::workflow
