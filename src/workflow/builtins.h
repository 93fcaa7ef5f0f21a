// Internal to the workflow layer: registration hooks of the built-in workflows (explicit calls
// from the registry in workflow.cpp instead of static initialisers, which a static library drops)
// and the did-you-mean helper shared by the workflow and reward registries.
#pragma once

#include <string>
#include <vector>

#include "workflow/workflow.h"

namespace trinity::workflow::detail {

void register_simple_workflows();       // simple_workflow.cpp
void register_frozen_lake_workflow();   // frozen_lake_workflow.cpp
void register_arithmetic_workflow();    // arithmetic.cpp

// Inserts a built-in unless the name is already registered.
void add_builtin(const std::string& name, WorkflowFactory factory);

// The registered name closest to `name` by edit distance, or "" when none is reasonably close.
std::string closest_name(const std::string& name, const std::vector<std::string>& names);

}  // namespace trinity::workflow::detail
