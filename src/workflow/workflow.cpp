// Workflow registry: name -> factory, guarded by one mutex. The built-in workflows are registered
// on first use; unknown names are a ConfigError with the closest registered name (Levenshtein
// distance) and the full list.
#include "workflow/workflow.h"

#include <algorithm>
#include <mutex>

#include "core/error.h"
#include "core/suggest.h"
#include "workflow/builtins.h"

namespace trinity::workflow {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, WorkflowFactory> factories;
};

Registry& raw_registry() {
  static Registry* r = new Registry();  // never destroyed: workflows may be made during teardown
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
  });
  return raw_registry();
}

}  // namespace

void detail::add_builtin(const std::string& name, WorkflowFactory factory) {
  Registry& r = raw_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.factories.emplace(name, std::move(factory));
}

std::string detail::closest_name(const std::string& name, const std::vector<std::string>& names) {
  std::string best;
  size_t best_d = static_cast<size_t>(-1);
  for (const auto& n : names) {
    const size_t d = edit_distance(name, n);
    if (d < best_d) best_d = d, best = n;
  }
  // Only suggest a name that is reasonably close (at most half of the longer name changed).
  if (best.empty() || best_d * 2 > std::max(name.size(), best.size())) return "";
  return best;
}

void register_workflow(const std::string& name, WorkflowFactory factory) {
  TRINITY_ASSERT(static_cast<bool>(factory), "register_workflow: empty factory for ", name);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.factories[name] = std::move(factory);
}

std::unique_ptr<Workflow> make_workflow(const std::string& name, const buffer::Task& task) {
  Registry& r = registry();
  WorkflowFactory f;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.factories.find(name);
    if (it != r.factories.end()) f = it->second;
  }
  if (!f) {
    const auto names = workflow_names();
    const std::string near = detail::closest_name(name, names);
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw ConfigError("workflow", strcat("unknown workflow '", name, "'",
                                         near.empty() ? "" : strcat(" (did you mean '", near, "'?)"),
                                         "; registered: ", list));
  }
  return f(task);
}

bool has_workflow(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.factories.count(name) != 0;
}

std::vector<std::string> workflow_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> out;
  for (const auto& [n, f] : r.factories) out.push_back(n);
  return out;
}

}  // namespace trinity::workflow
