// LLM-as-a-judge helpers shared by the judge workflows (rubric_judge_workflow, math_ruler_workflow,
// math_trainable_ruler_workflow, math_rm_workflow; trinity-rft.md §5.5): the policy's single-turn
// rollout, the judge's chat messages, robust parsing of a rating or a RULER score list, the judge
// record every judged experience carries in info["judge"] (prompt, raw judgement, parsed score) and
// JudgeError, whose "[judge] <reason>:" prefix the explorer counts as rollout/failed/judge_<reason>.
// Parsers never throw on model output: a judgement that does not parse is a value with a reason.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "buffer/experience.h"
#include "core/error.h"
#include "workflow/model_client.h"
#include "workflow/workflow.h"

namespace trinity::workflow {

// A failed judged run (the attempt fails and is retried); reason: unparsable, out_of_range,
// length_mismatch, no_judge, http.
class JudgeError : public Error {
 public:
  JudgeError(const std::string& reason, const std::string& msg) : Error("judge", reason + ": " + msg) {}
};

// One judge call as logged in Experience::info["judge"] (a JSON array, one entry per call):
// {"judge", "prompt" (the messages sent), "raw", "score" (null when unparsable), "scores" (RULER),
//  "error" (why it did not parse; absent when it did)}.
struct JudgeRecord {
  std::string judge;            // "auxiliary_models[0]", "policy" or "openai:<model>"
  std::string prompt;           // JSON array text of the chat messages sent to the judge
  std::string raw;              // the judgement text
  std::optional<double> score;  // this experience's score
  std::vector<double> scores;   // RULER: the whole parsed list (clipped)
  std::string error;            // "" = parsed
};
void add_judge_record(buffer::Experience& e, const JudgeRecord& r);

// Parse results: a value, or the failure reason class and a one-line detail.
struct ParsedRating {
  std::optional<double> rating;
  std::string reason, detail;  // reason: unparsable | out_of_range
};
struct ParsedScores {
  std::optional<std::vector<double>> scores;
  std::string reason, detail;  // reason: unparsable | length_mismatch
};

// A rating in [lo, hi] from a judgement, trying in order: the first ``` block (```json or bare
// ```) holding a JSON object with a numeric "rating"; every balanced {...} object in the text; the
// last `rating: 7` / `"rating" = 7.5` (case-insensitive). A rating outside [lo, hi] is out_of_range.
ParsedRating parse_rating(std::string_view text, double lo, double hi, const std::string& key = "rating");

// RULER's list: the text between the last '[' and the last ']' (fails when '[' comes after ']'),
// comma-separated finite numbers (a trailing comma is allowed), each clipped to [0, 1]; a list of
// another length than n is length_mismatch.
ParsedScores parse_score_list(std::string_view text, size_t n);

// [{"role":"system","content":system}, {"role":"user","content":user}] as JSON text.
std::string judge_messages(const std::string& system, const std::string& user);

// The policy's single-turn rollout, as SimpleWorkflow does it: messages = the row's messages, or
// [system?, user = task_desc]; one chat request with n = ctx.repeat_times (a reply prefix continues
// the rendered template). exps[i] = experience_from_sample(samples[i]) with eid.run = run_id_base + i
// and messages = the conversation; reward and metrics are the caller's.
struct PolicyRollout {
  std::string messages;  // JSON array text sent to the policy
  std::vector<Sample> samples;
  std::vector<buffer::Experience> exps;
};
PolicyRollout single_turn_rollout(const buffer::Task& task, const std::string& system_prompt, RunContext& ctx);

// ctx.auxiliary_models[0], or JudgeError no_judge naming the workflow and explorer.auxiliary_models.
ModelClient& auxiliary_judge(const RunContext& ctx, const std::string& workflow);

// The text of the first sample of a judge call (one chat request, n = 1).
std::string judge_chat(ModelClient& judge, const std::string& messages, GenOptions opt);

// Runs fn(0), ..., fn(n-1) side by side (the judge's engine batches them); after all returned,
// rethrows the first CancelledError, else the first other error.
void for_each_parallel(size_t n, const std::function<void(size_t)>& fn);

// workflow_args.judge_failure: what an unparsable rating does. "fail" (default): the run fails with
// JudgeError (counted as rollout/failed/judge_<reason>, retried); "zero": reward 0 and
// judge_success 0 (upstream's behaviour). ConfigError naming the value otherwise.
bool judge_failure_fails(const std::string& workflow, const std::string& value);

}  // namespace trinity::workflow
