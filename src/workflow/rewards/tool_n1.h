// Tool-N1 tool-call prompting and scoring (upstream customized_toolcall_workflows.py, adapted there
// from NVlabs/Tool-N1), used by tool_call_workflow. Rows are ToolACE-style: "tools" (JSON text of a
// list of function schemas), "raw_system", "conversations" ([{"from", "value"}]) and "answer" (JSON
// text of the gold [{"name", "arguments"}] list). Score (compute_score_v0_toolN1): 1 only when the
// last <tool_call>...</tool_call> holds JSON (a dict counts as a one-element list), the response has
// exactly one <think> and one </think>, </think> comes before the first <tool_call>, every call is
// an object with "name" and "arguments", and the calls equal the gold ones as a multiset of
// (name, arguments with sorted keys); else 0. JSON is printed as Python's json.dumps does
// (", " / ": " separators, ensure_ascii, keys in row order).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace trinity::workflow::tool_n1 {

// Python json.dumps(v, sort_keys=sort_keys) (ensure_ascii=True, default separators).
std::string py_dumps(const nlohmann::ordered_json& v, bool sort_keys = false);

// construct_prompt(row): [system = raw_system + the tool prompt with one
// {"type": "function", "function": tool} line per tool, then the conversation turns (human/user ->
// user, gpt/assistant -> assistant, observation/tool -> tool, function_call -> assistant with
// json.dumps(value); other "from" values are dropped)] as JSON array text. ValueError naming the
// field when the row lacks tools / raw_system / conversations or has malformed ones.
std::string construct_prompt(const nlohmann::ordered_json& row);

// compute_score_v0_toolN1(response, ground_truth) as 0.0 / 1.0. ground_truth: the row's "answer"
// (JSON text, decoded twice when it holds a JSON string; a list value is used as is). ValueError
// when the ground truth is not JSON or a gold call lacks "name"/"arguments" (upstream raises too).
// Where upstream would raise on model output (a non-list, non-object call payload), the score is 0.
double score(std::string_view response, const nlohmann::ordered_json& ground_truth);

}  // namespace trinity::workflow::tool_n1
