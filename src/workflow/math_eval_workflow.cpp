// math_eval_workflow (alias async_math_eval_workflow): upstream's MathEvalWorkflow, Qwen2.5-Math's
// evaluation recipe. The question is the row's "question" field (a ValueError when the row has none);
// the prompt is math_eval.h's; sampling ignores the taskset's rollout_args and uses upstream's fixed
// temperature 0.6, top_p 0.8, top_k -1 (off), n 1 (max_tokens: model default). Not can_repeat: the
// runner makes one run per repeat. Metric accuracy = qwen25::verify_math_answer(response, truth)
// when the task has a truth (none without one, as upstream). Reward 0: upstream sets none (its test
// expects the model's default 0.0); the accuracy is what an eval taskset reports.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "workflow/builtins.h"
#include "workflow/math_eval.h"
#include "workflow/rewards/qwen25_eval.h"
#include "workflow/simple_workflow.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;

class MathEvalWorkflow : public Workflow {
 public:
  explicit MathEvalWorkflow(const buffer::Task& task) : task_(task) {
    const json raw = json::parse(task.raw.empty() ? "{}" : task.raw, nullptr, false);
    if (raw.is_discarded() || !raw.is_object() || !raw.contains("question"))
      throw ValueError("workflow", strcat("math_eval_workflow: the task row must contain a 'question' field, got ",
                                          task.raw.substr(0, 200)));
    if (!raw["question"].is_string())
      throw ValueError("workflow", strcat("math_eval_workflow: the row's 'question' must be a string, got ",
                                          raw["question"].dump().substr(0, 200)));
    messages_ = qwen25_math_messages(raw["question"].get<std::string>());
  }

  std::vector<buffer::Experience> run(RunContext& ctx) override {
    TRINITY_ASSERT(ctx.model != nullptr, "math_eval_workflow without a model");
    ModelClient& model = *ctx.model;
    GenOptions opt;
    opt.temperature = 0.6;
    opt.top_p = 0.8;
    opt.top_k = -1;
    opt.n = 1;
    if (ctx.rng) opt.seed = ctx.rng->next_u64();
    const std::vector<Sample> samples = model.chat(messages_, opt);
    std::vector<buffer::Experience> out;
    for (size_t i = 0; i < samples.size(); ++i) {
      buffer::Experience e = experience_from_sample(samples[i], model, ctx.run_id_base + static_cast<int64_t>(i));
      e.reward = 0.0;
      if (!task_.truth.empty()) {
        const double acc = qwen25::verify_math_answer(samples[i].text, task_.truth);
        e.metrics["accuracy"] = acc;
      }
      json m = json::parse(messages_);
      m.push_back({{"role", "assistant"}, {"content", samples[i].text}});
      e.messages = m.dump();
      out.push_back(std::move(e));
    }
    return out;
  }

 private:
  buffer::Task task_;
  std::string messages_;
};

}  // namespace

std::string qwen25_math_messages(const std::string& question) {
  return json::array({{{"role", "system"}, {"content", "You are a helpful assistant."}},
                      {{"role", "user"},
                       {"content", question + "\nPlease reason step by step, and put your final answer within "
                                              "\\boxed{}."}}})
      .dump();
}

void detail::register_math_eval_workflow() {
  add_builtin("math_eval_workflow",
              [](const buffer::Task& t) -> std::unique_ptr<Workflow> { return std::make_unique<MathEvalWorkflow>(t); });
}

}  // namespace trinity::workflow
