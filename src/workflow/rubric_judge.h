// The rubric judge's prompts (upstream rubric_judge_workflow.py, RaR-implicit, arXiv 2507.17746),
// exposed for tests and for other workflows that judge against rubrics. The workflows themselves
// (rubric_judge_workflow, rubric_judge_openai_workflow) are in rubric_judge_workflow.cpp.
#pragma once

#include <string>

namespace trinity::workflow {

// The judge's system prompt: rate 1..10, answer with ```json {"rating": N}```.
const std::string& rubric_judge_system_prompt();
// The judge's user prompt: <prompt>task_desc</prompt> <response>...</response> <rubrics>...</rubrics>.
std::string rubric_judge_user_prompt(const std::string& task_desc, const std::string& response,
                                     const std::string& rubric_list);
// "Rubric i (weight: w): description" lines from the row's "rubric" list (a list, or a string holding
// one as JSON); "Rubrics are not provided." when absent or empty. ConfigError naming the bad item.
std::string rubric_list_text(const std::string& raw_row, const std::string& workflow);

}  // namespace trinity::workflow
