// llm_score: a judge model scores each row (Trinity-RFT's Data-Juicer llm_quality_score_filter /
// llm_difficulty_score_filter role), in the experience pipeline (an experience's prompt and
// response) and the task pipeline (any columns). The model is the caller's: an OpenAI-compatible URL
// or an explorer.auxiliary_models entry (launcher/llm_judge.h makes the `Ask`).
// args:
//   template     the user message; {prompt}, {response}, {reward} (experiences) or {<column>} (tasks)
//                are replaced; default: a 0-10 quality rating request. A name that is not a variable
//                is a config error.
//   system_prompt  optional system message
//   field        where the score goes: info.<field> (experiences) or the column <field> plus
//                "__dj__stats__" (tasks); default llm_quality_score
//   score_range  [lo, hi] the scale the template asks for (default [0, 10]); scores are mapped to [0, 1]
//   min_score, max_score  keep rows whose mapped score is in range (default: keep all)
//   drop_unparsed  drop rows whose reply has no score (default false: kept without a score)
//   concurrency  parallel requests (8); max_retries per row (2) on errors and unparsable replies
//   plus the model: api_url + model (+ api_key_env, timeout) or auxiliary_model (index)
// Score parsing (parse_score): a JSON object's "score", "Score: 7", "7/10", "\boxed{7}", else the last
// number in the reply; clipped to score_range. Metrics: mean_score, unparsed_count, filtered_count,
// error_count.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/operators.h"
#include "pipeline/task_pipeline.h"

namespace trinity::pipeline {

// Sends one chat (messages JSON array text) to the judge and returns the reply text; throws on failure.
using Ask = std::function<std::string(const std::string& messages_json)>;
// Called once, when the operator first runs (config check makes operators without calling it).
using AskFactory = JudgeFactory;

// The number a reply gives, or nullopt.
std::optional<double> parse_score(const std::string& reply);

// Argument names the model side reads (the launcher's AskFactory); llm_score accepts them.
const std::vector<std::string>& llm_judge_arg_names();

std::unique_ptr<ExperienceOperator> make_llm_score_experience_op(const OperatorConfig& cfg, AskFactory ask);
// Task rows: {text} is the text_keys / default_keys columns joined by "\n".
std::unique_ptr<TaskOperator> make_llm_score_task_op(const OperatorConfig& cfg, AskFactory ask,
                                                     std::vector<std::string> default_keys);

}  // namespace trinity::pipeline
