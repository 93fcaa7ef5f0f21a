// The Qwen2.5-Math evaluation prompt shared by math_eval_workflow and
// on_policy_distill_math_workflow (upstream eval_workflow.py / on_policy_distill_workflow.py):
// system "You are a helpful assistant.", user "<question>\nPlease reason step by step, and put your
// final answer within \boxed{}.". The answer is scored with qwen25::verify_math_answer.
#pragma once

#include <string>

namespace trinity::workflow {

// JSON array text of the two chat messages for `question`.
std::string qwen25_math_messages(const std::string& question);

}  // namespace trinity::workflow
