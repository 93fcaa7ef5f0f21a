// In-process fault injection into a `both` GRPO run (launcher::run_stage): a test workflow wraps
// arithmetic_workflow and, per task row's "fault" key, throws, hangs past explorer.max_timeout
// (polling cancelled()), ignores cancellation for longer than the runner's cancel grace (the attempt
// is abandoned), fails only its first attempt (retried), or returns no experiences. The run must
// complete, count each failure by reason in metrics.jsonl, and train exactly the successful tasks'
// experiences (failed tasks never deadlock the explorer against a trainer waiting for data); when
// every task failed it ends with an error naming the counts (judge failures as judge_<reason>).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>

#include "config/config.h"
#include "launcher/e2e_util.h"
#include "launcher/launcher.h"
#include "workflow/judge.h"
#include "workflow/workflow.h"

namespace trinity::test {
namespace {

std::mutex g_mu;
std::map<std::string, int> g_attempts;      // prompt -> attempts seen
std::atomic<bool> g_ignore_done{false};     // the abandoned attempt finally returned
std::atomic<bool> g_ignore_saw_cancel{false};

class FaultWorkflow : public workflow::Workflow {
 public:
  explicit FaultWorkflow(const buffer::Task& task)
      : inner_(workflow::make_workflow("arithmetic_workflow", task)),
        fault_(json::parse(task.raw).value("fault", "ok")),
        prompt_(task.task_desc) {}
  bool can_repeat() const override { return inner_->can_repeat(); }

  std::vector<buffer::Experience> run(workflow::RunContext& ctx) override {
    int attempt;
    {
      std::lock_guard<std::mutex> l(g_mu);
      attempt = ++g_attempts[prompt_];
    }
    if (fault_ == "throw") throw std::runtime_error("injected failure");
    if (fault_ == "judge") throw workflow::JudgeError("unparsable", "injected judge failure");
    if (fault_ == "flaky" && attempt == 1) throw std::runtime_error("injected first-attempt failure");
    if (fault_ == "empty") return {};
    if (fault_ == "ignore" && attempt == 1) {
      // Ignores cancellation past max_timeout + cancel_grace: the runner abandons this thread.
      std::this_thread::sleep_for(std::chrono::milliseconds(6500));
      g_ignore_saw_cancel = ctx.model->cancelled();
      g_ignore_done = true;
      return inner_->run(ctx);
    }
    if (fault_ == "hang" || fault_ == "ignore") {
      while (!ctx.model->cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      throw workflow::CancelledError("hang: cancelled");
    }
    return inner_->run(ctx);
  }

 private:
  std::unique_ptr<workflow::Workflow> inner_;
  std::string fault_, prompt_;
};

void write_fault_taskset(const std::string& path, const std::vector<std::string>& faults) {
  std::string rows;
  for (size_t i = 0; i < faults.size(); ++i) {
    const int a = 10 + static_cast<int>(i), b = 20 + static_cast<int>(i);
    rows += json{{"prompt", std::to_string(a) + "+" + std::to_string(b) + "="},
                 {"answer", std::to_string(a + b)},
                 {"fault", faults[i]}}
                .dump() +
            "\n";
  }
  write_text(path, rows);
}

config::Config fault_config(const std::string& name, const std::string& taskset,
                            const std::vector<std::string>& overrides) {
  const std::string& r = shared_root();
  std::string y = base_yaml(r, name);
  const std::string from = r + "/data/train.jsonl";
  y.replace(y.find(from), from.size(), taskset);
  y.replace(y.find("default_workflow_type: arithmetic_workflow"), 42, "default_workflow_type: fault_workflow");
  const config::LoadResult lr = config::load_config_text(y, name + ".yaml", r, overrides);
  return lr.config;
}

TEST(LauncherFaults, FailuresAreCountedAndSuccessfulTasksTrained) {
  workflow::register_workflow("fault_workflow",
                              [](const buffer::Task& t) { return std::make_unique<FaultWorkflow>(t); });
  const std::string& r = shared_root();
  const std::string ts = r + "/data/faults.jsonl";
  // Step 1: ok throw ok hang | step 2: flaky ignore ok empty -> 4 ok tasks x 2 runs = 8 experiences.
  write_fault_taskset(ts, {"ok", "throw", "ok", "hang", "flaky", "ignore", "ok", "empty"});
  const config::Config c =
      fault_config("faults", ts,
                   {"buffer.batch_size=4", "buffer.total_steps=2", "buffer.train_batch_size=3", "explorer.max_timeout=1",
                    "explorer.max_retry_times=1", "explorer.eval_on_startup=false"});
  std::atomic<bool> stop{false};
  const auto t0 = std::chrono::steady_clock::now();
  const launcher::StageSummary s = launcher::run_stage(c, &stop);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(s.explore_steps, 2);
  // 4 + 4 experiences in batches of 3: 3, 3, then the last partial batch of 2 once the explorer ends.
  EXPECT_EQ(s.train_steps, 3);
  EXPECT_FALSE(s.stopped);
  EXPECT_LT(secs, 30.0);

  const auto m = read_metrics(s.job_dir);
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/finished_task_count"), 4.0);
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/failed_task_count"), 4.0);
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/failed/error"), 1.0);
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/failed/timeout"), 2.0);
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/failed/no_experiences"), 1.0);
  EXPECT_EQ(metric_sum(m, "explorer", "experience_pipeline/experience_count"), 8.0);
  EXPECT_EQ(metric_steps(m, "trainer", "actor/pg_loss"), (std::vector<int64_t>{1, 2, 3}));
  {
    std::lock_guard<std::mutex> l(g_mu);
    EXPECT_EQ(g_attempts["14+24="], 2) << "flaky task retried once";
    EXPECT_EQ(g_attempts["11+21="], 2) << "throwing task: 1 + max_retry_times attempts";
    EXPECT_EQ(g_attempts["13+23="], 2) << "hanging task: 1 + max_retry_times attempts";
    EXPECT_EQ(g_attempts["15+25="], 2) << "abandoned task was retried";
  }
  // The abandoned attempt returns later on its own (detached) thread; it was cancelled.
  for (int i = 0; i < 200 && !g_ignore_done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(g_ignore_done);
  EXPECT_TRUE(g_ignore_saw_cancel);
}

TEST(LauncherFaults, EveryTaskFailingEndsTheRunWithAnError) {
  workflow::register_workflow("fault_workflow",
                              [](const buffer::Task& t) { return std::make_unique<FaultWorkflow>(t); });
  const std::string& r = shared_root();
  const std::string ts = r + "/data/all_fail.jsonl";
  write_fault_taskset(ts, {"throw", "empty", "judge", "empty"});
  const config::Config c = fault_config("all_fail", ts,
                                        {"buffer.batch_size=2", "buffer.total_steps=2", "explorer.max_retry_times=0",
                                         "explorer.eval_on_startup=false"});
  std::atomic<bool> stop{false};
  // Nothing trained: the run is an error naming the failure counts (`trinity run` exits 1), not a success.
  std::string err;
  try {
    launcher::run_stage(c, &stop);
  } catch (const Error& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("[explorer] every task failed (4 tasks over 2 explore steps; error: 1, judge_unparsable: 1, "
                     "no_experiences: 2)"),
            std::string::npos)
      << err;
  const auto m = read_metrics(c.job_dir());
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/failed_task_count"), 4.0);
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/failed/error"), 1.0);
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/failed/judge_unparsable"), 1.0);  // "[judge] <reason>:" errors
  EXPECT_EQ(metric_sum(m, "explorer", "rollout/failed/no_experiences"), 2.0);
  EXPECT_FALSE(has_metric(m, "trainer", "actor/pg_loss"));
}

}  // namespace
}  // namespace trinity::test
