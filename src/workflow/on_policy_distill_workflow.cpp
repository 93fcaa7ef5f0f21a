// on_policy_distill_workflow and on_policy_distill_math_workflow (upstream
// on_policy_distill_workflow.py; the trainer's on_policy_distill / jsd advantage reads the result):
// the student (rollout model) samples n = repeat_times responses with the taskset's rollout_args
// (can_repeat); the teacher, explorer.auxiliary_models[0], scores the same token sequence with
// ModelClient::logprobs at workflow_args.temperature (1.0). Teacher logprobs of tokens[1..L-1]
// sliced from prompt_length - 1 are the response's: Experience::teacher_logprobs ([L -
// prompt_length], one per rollout logprob; a length mismatch is a ValueError). Metric
// kl_divergence = sum(student - teacher) over the response. Reward: 0 (plain; no reward_fn is
// used), or the math variant's Qwen2.5-Math accuracy (also metric accuracy) with math_eval.h's
// prompt around task_desc. The plain variant's prompt is [system_prompt?, user = task_desc] (or the
// row's messages) with the reply prefix continuing the assistant turn.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "workflow/builtins.h"
#include "workflow/judge.h"
#include "workflow/math_eval.h"
#include "workflow/rewards/qwen25_eval.h"
#include "workflow/simple_workflow.h"

namespace trinity::workflow {
namespace {

class OnPolicyDistillWorkflow : public Workflow {
 public:
  OnPolicyDistillWorkflow(const buffer::Task& task, std::string name, bool math)
      : task_(task), name_(std::move(name)), math_(math) {
    WorkflowArgs wa(name_, task.workflow_args, {"temperature"});
    temperature_ = wa.get_double("temperature", 1.0);
    if (!(temperature_ > 0.0))
      throw ConfigError("workflow", strcat(name_, ": workflow_args.temperature must be > 0, got ", temperature_));
    if (math_) {
      task_.messages = qwen25_math_messages(task.task_desc);
      task_.reply_prefix.clear();
    }
  }
  bool can_repeat() const override { return true; }

  std::vector<buffer::Experience> run(RunContext& ctx) override {
    if (ctx.auxiliary_models.empty() || ctx.auxiliary_models[0] == nullptr)
      throw ConfigError("workflow", strcat(name_,
                                           " needs a teacher model: set explorer.auxiliary_models (the first "
                                           "one is the teacher)"));
    ModelClient& teacher = *ctx.auxiliary_models[0];
    PolicyRollout r = single_turn_rollout(task_, task_.system_prompt, ctx);
    std::vector<std::vector<float>> tl(r.exps.size());
    for_each_parallel(r.exps.size(), [&](size_t i) { tl[i] = teacher.logprobs(r.exps[i].tokens, temperature_); });
    for (size_t i = 0; i < r.exps.size(); ++i) {
      buffer::Experience& e = r.exps[i];
      const size_t start = e.prompt_length > 0 ? static_cast<size_t>(e.prompt_length - 1) : 0;
      const size_t n_resp = e.logprobs.size();
      if (e.prompt_length < 1 || tl[i].size() < start || tl[i].size() - start != n_resp)
        throw ValueError("workflow", strcat(name_, ": teacher logprobs do not match the response: teacher ",
                                            tl[i].size(), " for ", e.tokens.size(), " tokens (prompt_length ",
                                            e.prompt_length, ") gives ", tl[i].size() - std::min(start, tl[i].size()),
                                            " response logprobs, student has ", n_resp));
      e.teacher_logprobs.assign(tl[i].begin() + static_cast<std::ptrdiff_t>(start), tl[i].end());
      double kl = 0.0;
      for (size_t k = 0; k < n_resp; ++k)
        kl += static_cast<double>(e.logprobs[k]) - static_cast<double>(e.teacher_logprobs[k]);
      e.metrics["kl_divergence"] = kl;
      e.reward = 0.0;
      if (math_ && !r.samples[i].text.empty() && !task_.truth.empty()) {
        const double acc = qwen25::verify_math_answer(r.samples[i].text, task_.truth);
        e.metrics["accuracy"] = acc;
        e.reward = acc;
      }
    }
    return std::move(r.exps);
  }

 private:
  buffer::Task task_;
  std::string name_;
  bool math_;
  double temperature_ = 1.0;
};

}  // namespace

void detail::register_on_policy_distill_workflows() {
  add_builtin("on_policy_distill_workflow", [](const buffer::Task& t) -> std::unique_ptr<Workflow> {
    return std::make_unique<OnPolicyDistillWorkflow>(t, "on_policy_distill_workflow", false);
  });
  add_builtin("on_policy_distill_math_workflow", [](const buffer::Task& t) -> std::unique_ptr<Workflow> {
    return std::make_unique<OnPolicyDistillWorkflow>(t, "on_policy_distill_math_workflow", true);
  });
}

}  // namespace trinity::workflow
