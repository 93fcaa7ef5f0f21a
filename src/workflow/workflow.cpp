// Workflow registry (core/registry.h): the built-in workflows are registered on first use; unknown
// names are a ConfigError with the closest registered name and the full list. Trinity's async_*
// names are aliases: trinity has no sync/async split (the explorer runs workflows concurrently), so
// async_x makes whatever x names at that moment (an override of x applies to async_x too).
#include "workflow/workflow.h"

#include <algorithm>
#include <mutex>
#include <set>

#include "core/error.h"
#include "core/registry.h"
#include "workflow/builtins.h"

namespace trinity::workflow {
namespace {

using Registry = NamedRegistry<WorkflowFactory>;

Registry& raw_registry() {
  static Registry* r = new Registry("workflow", "workflow");  // never destroyed: workflows may be made during teardown
  return *r;
}

// Built-ins go in on first use; add_builtin never replaces, so a test's earlier
// register_workflow() of the same name wins.
Registry& registry() {
  static std::once_flag once;
  std::call_once(once, [] {
    detail::register_simple_workflows();
    detail::register_frozen_lake_workflow();
    detail::register_arithmetic_workflow();
    detail::register_command_workflow();
    detail::register_env_workflows();
    detail::register_react_workflow();
    detail::register_rubric_judge_workflows();
    detail::register_ruler_workflows();
    detail::register_math_rm_workflow();
    detail::register_math_eval_workflow();
    detail::register_on_policy_distill_workflows();
    detail::register_tool_call_workflow();
    for (const auto& [alias, target] : workflow_aliases()) {
      const std::string t = target;
      detail::add_builtin(alias, [t](const buffer::Task& task) { return raw_registry().get(t)(task); });
    }
  });
  return raw_registry();
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& workflow_aliases() {
  static const std::vector<std::pair<std::string, std::string>> a = {
      {"async_simple_workflow", "simple_workflow"},         {"async_math_workflow", "math_workflow"},
      {"async_math_boxed_workflow", "math_boxed_workflow"}, {"async_math_rm_workflow", "math_rm_workflow"},
      {"async_math_ruler_workflow", "math_ruler_workflow"}, {"async_math_eval_workflow", "math_eval_workflow"},
  };
  return a;
}

namespace {
std::set<std::string>& no_prompt_workflows() {
  static std::set<std::string> s;
  return s;
}
}  // namespace

void detail::add_builtin(const std::string& name, WorkflowFactory factory, bool reads_prompt) {
  raw_registry().add(name, std::move(factory), /*replace=*/false);
  if (!reads_prompt) no_prompt_workflows().insert(name);
}

void register_workflow(const std::string& name, WorkflowFactory factory) {
  TRINITY_ASSERT(static_cast<bool>(factory), "register_workflow: empty factory for ", name);
  registry().add(name, std::move(factory));
}

std::unique_ptr<Workflow> make_workflow(const std::string& name, const buffer::Task& task) {
  return registry().get(name)(task);
}

bool has_workflow(const std::string& name) {
  return registry().contains(name);
}

bool workflow_reads_prompt(const std::string& name) {
  registry();  // registers the built-ins (and their flags) on first use
  return !no_prompt_workflows().count(name);
}

std::vector<std::string> workflow_names() {
  return registry().names();
}

}  // namespace trinity::workflow
