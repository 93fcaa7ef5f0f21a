// tool_call_workflow (also toolcall_workflow, the name upstream's examples/grpo_toolcall/toolace.yaml
// uses): upstream's ToolCallWorkflow for ToolACE rows. The prompt is rewards/tool_n1.h's
// construct_prompt(row) (the row's own "tools" go into the system text, not the chat template's tool
// list); one chat request with n = repeat_times and the taskset's rollout_args (can_repeat). Reward =
// tool_n1::score(response, row["answer"]) (0 or 1), or 0 with an error logged when the row has no
// "answer" (as upstream). Metric accuracy = the same score. workflow_args are not read (upstream
// reads none).
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "workflow/builtins.h"
#include "workflow/rewards/tool_n1.h"
#include "workflow/simple_workflow.h"

namespace trinity::workflow {
namespace {

using ojson = nlohmann::ordered_json;

class ToolCallWorkflow : public Workflow {
 public:
  explicit ToolCallWorkflow(const buffer::Task& task) : task_(task) {
    row_ = ojson::parse(task.raw.empty() ? "{}" : task.raw, nullptr, false);
    if (row_.is_discarded() || !row_.is_object())
      throw ValueError("tool_call",
                       strcat("tool_call_workflow: the task row is not a JSON object: ", task.raw.substr(0, 200)));
    messages_ = tool_n1::construct_prompt(row_);
  }
  bool can_repeat() const override { return true; }

  std::vector<buffer::Experience> run(RunContext& ctx) override {
    TRINITY_ASSERT(ctx.model != nullptr, "tool_call_workflow without a model");
    ModelClient& model = *ctx.model;
    const GenOptions opt = gen_options_for(task_, std::max<int64_t>(1, ctx.repeat_times), ctx.rng);
    const std::vector<Sample> samples = model.chat(messages_, opt);
    const bool has_answer = row_.contains("answer") && !row_["answer"].is_null();
    if (!has_answer) log::error("tool_call_workflow: key 'answer' not found in the task row; reward 0");
    std::vector<buffer::Experience> out;
    for (size_t i = 0; i < samples.size(); ++i) {
      buffer::Experience e = experience_from_sample(samples[i], model, ctx.run_id_base + static_cast<int64_t>(i));
      const double r = has_answer ? tool_n1::score(samples[i].text, row_["answer"]) : 0.0;
      e.reward = r;
      e.metrics["accuracy"] = r;
      ojson m = ojson::parse(messages_);
      m.push_back({{"role", "assistant"}, {"content", samples[i].text}});
      e.messages = m.dump();
      out.push_back(std::move(e));
    }
    return out;
  }

 private:
  buffer::Task task_;
  ojson row_;
  std::string messages_;
};

}  // namespace

void detail::register_tool_call_workflow() {
  for (const char* name : {"tool_call_workflow", "toolcall_workflow"})
    add_builtin(
        name, [](const buffer::Task& t) -> std::unique_ptr<Workflow> { return std::make_unique<ToolCallWorkflow>(t); });
}

}  // namespace trinity::workflow
