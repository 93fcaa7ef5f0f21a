// math_rm_workflow's generative reward-model prompts (math_rm_workflow.cpp; ours: upstream scores
// with RM-Gallery instead, see that file), exposed for tests.
#pragma once

#include <string>

namespace trinity::workflow {

// Rate 1..10, answer with ```json {"rating": N}``` (the rubric judge's answer format).
const std::string& math_rm_system_prompt();
// <question>, <reference_answer> (omitted when `reference` is empty), <solution>.
std::string math_rm_user_prompt(const std::string& question, const std::string& reference, const std::string& response);

}  // namespace trinity::workflow
