// RULER's judge prompts (upstream math_ruler_workflow.py / math_trainable_ruler_workflow.py, adapted
// there from OpenPipe ART's ruler.py): the judge sees the question and all G candidate solutions and
// must end with a list [s1, ..., sG] of scores in [0, 1]. One deliberate difference: upstream's last
// line asks for "score for solution {G + 1}" (an off-by-one); ours asks for "solution G". The
// workflows are in ruler_workflow.cpp.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace trinity::workflow {

// Upstream's PROBABILITY_GROUND_TRUTH_AVAILABLE (math_trainable_ruler_workflow).
inline constexpr double kRulerGroundTruthProbability = 0.2;
// eid.batch tag of the trainable-RULER judge experiences: their own GRPO group (upstream's task id
// "<id>-ruler"); see workflow.h.
inline constexpr const char* kRulerGroupTag = "-ruler";

std::string ruler_system_prompt(size_t n_candidates);
// trainable = true: math_trainable_ruler_workflow's variant (no blank lines between the sections).
std::string ruler_user_prompt(const std::string& task_desc, const std::vector<std::string>& candidates, bool trainable);

}  // namespace trinity::workflow
