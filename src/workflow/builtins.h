// Internal to the workflow layer: registration hooks of the built-in workflows (explicit calls
// from the registry in workflow.cpp instead of static initialisers, which a static library drops).
#pragma once

#include <string>
#include <vector>

#include "workflow/workflow.h"

namespace trinity::workflow::detail {

void register_simple_workflows();       // simple_workflow.cpp
void register_frozen_lake_workflow();   // frozen_lake_workflow.cpp
void register_arithmetic_workflow();    // arithmetic.cpp
void register_command_workflow();       // command_workflow.cpp
void register_env_workflows();          // env_workflow.cpp
void register_env_presets();            // env_presets.cpp (alfworld_workflow, ...)
void register_react_workflow();         // react_workflow.cpp
void register_rubric_judge_workflows();       // rubric_judge_workflow.cpp
void register_ruler_workflows();              // ruler_workflow.cpp
void register_math_rm_workflow();             // math_rm_workflow.cpp
void register_math_eval_workflow();           // math_eval_workflow.cpp
void register_on_policy_distill_workflows();  // on_policy_distill_workflow.cpp
void register_tool_call_workflow();           // tool_call_workflow.cpp

// Inserts a built-in unless the name is already registered. reads_prompt = false for workflows that
// build their prompt from their own columns (workflow_reads_prompt).
void add_builtin(const std::string& name, WorkflowFactory factory, bool reads_prompt = true);

}  // namespace trinity::workflow::detail
