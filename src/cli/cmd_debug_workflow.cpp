// `trinity debug workflow --config X [--task N] [--taskset train|eval|NAME] [--seed S] [--output DIR]
// [--no-color] [--set ...]`: runs the workflow of one task exactly as the explorer would (the launcher's
// rollout model, an explorer::EngineClient per attempt, the runner pool's repeat / timeout logic with
// no retries) and prints the task row, then per experience the conversation with the model-generated
// tokens (action_mask = 1) highlighted — green on a terminal without NO_COLOR, [[...]] otherwise —
// reward, metrics, a logprob summary, the finish / truncate status and each judge call (prompt,
// judgement, score) of judged workflows; explorer.auxiliary_models are loaded as the explorer does. --output writes
// DIR/experiences.jsonl (buffer::experience_to_json). A failing workflow is an error naming the task and the reason
// (exit 1). With `stages:`, the last stage that has the chosen kind of taskset is used; its model is the previous
// stage's final checkpoint when stage_meta.json records one (as `trinity run` chains stages).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "buffer/dataset.h"
#include "buffer/experience.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/stage_util.h"
#include "config/config.h"
#include "core/console.h"
#include "core/error.h"
#include "core/file.h"
#include "core/timer.h"
#include "explorer/engine_client.h"
#include "explorer/runner_pool.h"
#include "launcher/launcher.h"
#include "model/transformer.h"
#include "tokenizer/tokenizer.h"
#include "workflow/workflow.h"

namespace trinity::cli {

namespace {

const buffer::TasksetConfig* pick_taskset(const config::Config& c, const std::string& which) {
  const auto& ei = c.buffer.explorer_input;
  if (which == "train") return ei.tasksets.empty() ? nullptr : &ei.tasksets[0];
  if (which == "eval") return ei.eval_tasksets.empty() ? nullptr : &ei.eval_tasksets[0];
  for (const auto* list : {&ei.tasksets, &ei.eval_tasksets})
    for (const auto& t : *list)
      if (t.name == which) return &t;
  return nullptr;
}

std::string task_names(const config::Config& c) {
  std::string s;
  for (const auto* list : {&c.buffer.explorer_input.tasksets, &c.buffer.explorer_input.eval_tasksets})
    for (const auto& t : *list) s += (s.empty() ? "" : ", ") + t.name;
  return s.empty() ? "(none)" : s;
}

// Prompt text, then the response with each action_mask = 1 run marked.
std::string conversation(const buffer::Experience& e, const tok::Tokenizer& tok, bool color) {
  const char* open = color ? "\x1b[1;32m" : "[[";
  const char* close = color ? "\x1b[0m" : "]]";
  const auto pl = static_cast<size_t>(std::clamp<int64_t>(e.prompt_length, 0, static_cast<int64_t>(e.tokens.size())));
  std::string out = tok.decode(std::span<const int32_t>(e.tokens.data(), pl));
  size_t i = pl;
  while (i < e.tokens.size()) {
    const size_t k = i - pl;
    const bool gen = k >= e.action_mask.size() || e.action_mask[k] != 0;
    size_t j = i;
    while (j < e.tokens.size()) {
      const size_t kj = j - pl;
      const bool g = kj >= e.action_mask.size() || e.action_mask[kj] != 0;
      if (g != gen) break;
      ++j;
    }
    const std::string text = tok.decode(std::span<const int32_t>(e.tokens.data() + i, j - i));
    out += gen ? std::string(open) + text + close : text;
    i = j;
  }
  return out;
}

// info["judge"] (workflow/judge.h): per judge call the judge, the parsed score (or why it did not
// parse), the prompt's last message and the raw judgement, indented.
void print_judge_calls(const nlohmann::json& calls) {
  auto indented = [](const std::string& text) {
    std::string out = "      ";
    for (char ch : text) out += ch == '\n' ? std::string("\n      ") : std::string(1, ch);
    return out;
  };
  for (size_t k = 0; k < calls.size(); ++k) {
    const auto& c = calls[k];
    const std::string who = c.value("judge", std::string("?"));
    std::string score = c.contains("score") && c["score"].is_number() ? strcat(c["score"].get<double>()) : "none";
    if (c.contains("scores")) score += strcat(" of ", c["scores"].dump());
    if (c.contains("error")) score += strcat(" (", c["error"].get<std::string>(), ")");
    std::printf("  judge call %zu (%s): score %s\n", k, who.c_str(), score.c_str());
    if (c.contains("prompt") && c["prompt"].is_array() && !c["prompt"].empty()) {
      const auto& last = c["prompt"].back();
      std::printf("    prompt (%zu messages; last, %s):\n%s\n", c["prompt"].size(),
                  last.value("role", std::string("?")).c_str(), indented(last.value("content", std::string())).c_str());
    }
    std::printf("    judgement:\n%s\n", indented(c.value("raw", std::string())).c_str());
  }
}

void print_logprobs(const buffer::Experience& e, const tok::Tokenizer& tok) {
  double sum = 0, minv = std::numeric_limits<double>::infinity();
  int64_t n = 0, at = -1;
  for (size_t k = 0; k < e.logprobs.size(); ++k) {
    if (k < e.action_mask.size() && e.action_mask[k] == 0) continue;
    const double v = e.logprobs[k];
    sum += v;
    ++n;
    if (v < minv) minv = v, at = static_cast<int64_t>(k);
  }
  if (n == 0) {
    std::printf("  logprobs: no generated tokens\n");
    return;
  }
  const int32_t worst = e.tokens[static_cast<size_t>(e.prompt_length + at)];
  const nlohmann::json shown = tok.decode(std::span<const int32_t>(&worst, 1));
  std::printf("  logprobs: %lld generated tokens (of %lld response tokens), mean %.4f, sum %.4f, min %.4f at "
              "response token %lld (%s), perplexity %.3f\n",
              static_cast<long long>(n), static_cast<long long>(e.response_length()), sum / static_cast<double>(n),
              sum, minv, static_cast<long long>(at), shown.dump().c_str(), std::exp(-sum / static_cast<double>(n)));
}

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

}  // namespace

int cmd_debug_workflow(const Argv& argv) {
  const Args a("debug workflow", argv, {"config", "set", "task", "taskset", "seed", "output", "no-color!"});
  const std::string which = a.str("taskset", "train");
  const int64_t index = a.i64("task", 0);
  const config::LoadResult r = config::load_config(a.str("config"), a.all("set"));
  for (const auto& w : r.warnings) std::fprintf(stderr, "trinity: warning: %s\n", w.c_str());

  // The config (or last stage) that has the requested taskset.
  config::Config c = r.config;
  const buffer::TasksetConfig* tsc = nullptr;
  if (r.stages.empty()) {
    tsc = pick_taskset(c, which);
  } else {
    for (size_t i = r.stages.size(); i-- > 0;)
      if (pick_taskset(r.stages[i], which)) {
        std::string note;
        c = stage_with_chained_model(r, i, &note);
        if (!note.empty()) std::fprintf(stderr, "trinity: %s\n", note.c_str());
        tsc = pick_taskset(c, which);
        break;
      }
  }
  if (!tsc)
    throw ConfigError("debug workflow", strcat("--taskset ", which, ": the config has no such taskset (tasksets: ",
                                               task_names(r.stages.empty() ? r.config : r.stages.back()),
                                               "); use train, eval or a taskset name"));
  // A copy: `c` is reassigned below (Hub model ids resolved), which would leave a pointer into it dangling.
  buffer::TasksetConfig ts = *tsc;
  ts.prompt_required = workflow::workflow_reads_prompt(ts.default_workflow_type);
  const auto taskset = buffer::Taskset::load(ts);
  if (index < 0 || static_cast<size_t>(index) >= taskset.size())
    throw ConfigError("debug workflow", strcat("--task ", index, " is out of range: taskset '", ts.name, "' (", ts.path,
                                               ") has ", taskset.size(), " tasks"));
  buffer::Task task = taskset.at(static_cast<size_t>(index));
  task.is_eval = ts.is_eval;

  std::printf("task %lld of taskset '%s' (%s, %zu tasks): workflow %s, repeat_times %lld%s\n",
              static_cast<long long>(index), ts.name.c_str(), ts.path.c_str(), taskset.size(), task.workflow.c_str(),
              static_cast<long long>(task.repeat_times), task.is_eval ? ", eval" : "");
  std::printf("row: %s\n", task.raw.c_str());
  if (!task.reward_fn.empty()) std::printf("reward_fn: %s %s\n", task.reward_fn.c_str(), task.reward_fn_args.c_str());
  if (task.workflow_args != "{}" && !task.workflow_args.empty())
    std::printf("workflow_args: %s\n", task.workflow_args.c_str());
  std::fflush(stdout);

  c = launcher::resolve_hub_models(c);  // Hub model ids -> local snapshot folders
  std::fprintf(stderr, "trinity: loading %s\n", c.model.model_path.c_str());
  auto weights = std::make_shared<const model::Transformer>(model::Transformer::load(c.model.model_path));
  const auto rm = launcher::make_rollout_model(c, weights, 0);
  const auto aux = launcher::make_auxiliary_models(c);  // judges see them as RunContext::auxiliary_models
  explorer::RunnerOptions ro;
  ro.runners = 1;
  ro.max_timeout = c.explorer.max_timeout;
  ro.max_retry_times = 0;
  ro.work_dir = c.config_dir;
  explorer::RunnerPool pool(ro, explorer::engine_client_factory(rm, aux));
  explorer::TaskJob job;
  job.task = task;
  job.batch_id = "debug";
  job.task_id = index;
  job.seed = static_cast<uint64_t>(a.i64("seed", c.explorer.rollout_model.seed));
  const explorer::TaskResult res = pool.submit(job).get();
  if (!res.ok)
    throw ValueError("debug workflow",
                     strcat("workflow '", task.workflow, "' failed on task ", index, " of '", ts.name, "' (",
                            res.attempts, " attempt, ", format_seconds(res.seconds), "): ", res.error));

  const bool color = !a.flag("no-color") && console::use_color(STDOUT_FILENO);  // NO_COLOR, TERM=dumb: none
  const tok::Tokenizer& tok = rm->chat->tokenizer();
  double reward_sum = 0;
  int64_t rewarded = 0;
  for (size_t i = 0; i < res.experiences.size(); ++i) {
    const buffer::Experience& e = res.experiences[i];
    std::printf("\n=== experience %zu (run %lld, eid %s): %lld prompt + %lld response tokens ===\n", i,
                static_cast<long long>(e.eid.run), e.eid.uid().c_str(), static_cast<long long>(e.prompt_length),
                static_cast<long long>(e.response_length()));
    std::printf("%s\n---\n", conversation(e, tok, color).c_str());
    if (e.reward) {
      std::printf("  reward: %.4f\n", *e.reward);
      reward_sum += *e.reward;
      ++rewarded;
    } else {
      std::printf("  reward: pending (delayed)\n");
    }
    if (!e.metrics.empty()) {
      std::printf("  metrics:");
      for (const auto& [k, v] : e.metrics) std::printf(" %s=%.4g", k.c_str(), v);
      std::printf("\n");
    }
    print_logprobs(e, tok);
    auto info = nlohmann::json::parse(e.info.empty() ? "{}" : e.info, nullptr, false);
    const std::string finish = info.is_object() && info.contains("finish_reason") && info["finish_reason"].is_string()
                                   ? info["finish_reason"].get<std::string>()
                                   : "?";
    const std::string trunc = buffer::truncate_status_name(e.truncate_status);
    std::printf("  finish: %s, truncate: %s, model_version %lld\n", finish.c_str(), trunc.empty() ? "none" : trunc.c_str(),
                static_cast<long long>(e.model_version));
    if (info.is_object() && info.contains("judge") && info["judge"].is_array()) {
      print_judge_calls(info["judge"]);
      info.erase("judge");
      if (!info.empty()) std::printf("  info: %s\n", info.dump().c_str());
    } else if (!e.info.empty() && e.info != "{}") {
      std::printf("  info: %s\n", e.info.c_str());
    }
  }
  std::printf("\n%zu experience%s in %.2f s", res.experiences.size(), res.experiences.size() == 1 ? "" : "s",
              res.seconds);
  if (rewarded) std::printf(", mean reward %.4f", reward_sum / static_cast<double>(rewarded));
  std::printf("\n");
  for (const auto& [k, v] : res.metrics) std::printf("  task metric %s = %.4g\n", k.c_str(), v);

  if (a.has("output")) {
    const std::string dir = a.str("output");
    file::make_dirs(dir);
    std::string text;
    for (const auto& e : res.experiences) text += buffer::experience_to_json(e) + "\n";
    const std::string out = file::join(dir, "experiences.jsonl");
    file::write_atomic(out, text);
    std::fflush(stdout);
    std::fprintf(stderr, "trinity: wrote %s (%zu experiences)\n", out.c_str(), res.experiences.size());
  }
  return 0;
}

}  // namespace trinity::cli
