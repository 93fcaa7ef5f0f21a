// RunnerPool: repeats (can_repeat and not, sequential and concurrent), eid stamping, per-run and
// per-task metrics, and fault handling — a workflow that throws, returns nothing, hangs but honours
// cancellation, or ignores it (abandoned) — with retries, failure reasons, and dynamic timeouts.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "explorer/runner_pool.h"
#include "workflow/fake_client.h"
#include "workflow/workflow.h"

namespace trinity::explorer {
namespace {

using namespace std::chrono_literals;

std::atomic<int> g_calls{0};

// Emits one experience per run with reward = run id and metric "m" = 2 * run id. Behaviour from
// task.raw: {"fail": N} throws on the first N calls, {"empty": true} returns nothing, {"hang": true}
// sleeps until cancelled, {"stuck": S} ignores cancellation for S seconds.
class ScriptedWorkflow : public workflow::Workflow {
 public:
  explicit ScriptedWorkflow(const buffer::Task& t, bool repeat) : raw_(t.raw), repeat_(repeat) {}
  bool can_repeat() const override { return repeat_; }
  std::vector<buffer::Experience> run(workflow::RunContext& ctx) override {
    const auto j = nlohmann::json::parse(raw_);
    const int call = g_calls.fetch_add(1);
    if (j.value("fail", 0) > call) throw ValueError("test", "scripted failure");
    if (j.value("empty", false)) return {};
    if (j.value("hang", false)) {
      while (!ctx.model->cancelled()) std::this_thread::sleep_for(5ms);
      throw workflow::CancelledError("cancelled");
    }
    if (j.contains("stuck")) std::this_thread::sleep_for(std::chrono::duration<double>(j["stuck"].get<double>()));
    if (j.contains("sleep")) std::this_thread::sleep_for(std::chrono::duration<double>(j["sleep"].get<double>()));
    std::vector<buffer::Experience> out;
    for (int64_t i = 0; i < ctx.repeat_times; ++i) {
      buffer::Experience e;
      e.tokens = {1, 2, 3};
      e.prompt_length = 1;
      e.logprobs = {-0.1f, -0.2f};
      e.action_mask = {1, 1};
      e.eid.run = ctx.run_id_base + i;
      e.reward = static_cast<double>(ctx.run_id_base + i);
      e.metrics["m"] = 2.0 * static_cast<double>(ctx.run_id_base + i);
      e.metrics["aux"] = static_cast<double>(ctx.auxiliary_models.size());
      if (!ctx.auxiliary_models.empty()) e.metrics["aux_cancelled"] = ctx.auxiliary_models[0]->cancelled();
      if (j.contains("tag") && i % 2) e.eid.batch = j["tag"].get<std::string>();  // a workflow's group tag
      out.push_back(e);
    }
    return out;
  }

 private:
  std::string raw_;
  bool repeat_;
};

struct Fixture : ::testing::Test {
  void SetUp() override {
    g_calls = 0;
    workflow::register_workflow("test_scripted", [](const buffer::Task& t) {
      return std::make_unique<ScriptedWorkflow>(t, false);
    });
    workflow::register_workflow("test_scripted_repeat", [](const buffer::Task& t) {
      return std::make_unique<ScriptedWorkflow>(t, true);
    });
  }
  RunnerPool make(RunnerOptions o) {
    return RunnerPool(o, [](const buffer::Task&, uint64_t) {
      auto c = std::make_shared<testing::FakeModelClient>(testing::byte_tokenizer(), std::vector<int32_t>{256});
      return AttemptClient{c, [c] { c->cancel = true; }, {}};
    });
  }
  static TaskJob job(const std::string& wf, const std::string& raw, int64_t repeats, int64_t id = 0) {
    TaskJob j;
    j.task.workflow = wf;
    j.task.raw = raw;
    j.task.repeat_times = repeats;
    j.batch_id = "7";
    j.task_id = id;
    return j;
  }
};

TEST_F(Fixture, RepeatsStampEidsAndAverageMetrics) {
  for (const char* wf : {"test_scripted", "test_scripted_repeat"}) {
    for (bool concurrent : {false, true}) {
      RunnerOptions o;
      o.runners = 2;
      o.concurrent_repeats = concurrent;
      auto pool = make(o);
      TaskResult r = pool.submit(job(wf, "{}", 4, 3)).get();
      ASSERT_TRUE(r.ok) << wf << ": " << r.error;
      ASSERT_EQ(r.experiences.size(), 4u);
      std::set<int64_t> runs;
      for (const auto& e : r.experiences) {
        EXPECT_EQ(e.eid.batch, "7");
        EXPECT_EQ(e.eid.task, 3);
        EXPECT_EQ(e.eid.suffix.size(), 6u);
        runs.insert(e.eid.run);
        EXPECT_DOUBLE_EQ(*e.reward, static_cast<double>(e.eid.run));
      }
      EXPECT_EQ(runs, (std::set<int64_t>{0, 1, 2, 3})) << wf;
      ASSERT_EQ(r.run_metrics.size(), 4u);
      EXPECT_DOUBLE_EQ(r.metrics.at("m"), 3.0);  // mean of 0, 2, 4, 6
      EXPECT_TRUE(r.metrics.count("time/run_execution"));
      EXPECT_TRUE(r.metrics.count("time/task_execution"));
      EXPECT_EQ(r.attempts, 1);
    }
  }
}

// A workflow's eid.batch tag starting with '-' (math_trainable_ruler_workflow's "-ruler" judge
// experiences) survives as a suffix of the batch id: its own GRPO group. Other values are overwritten.
TEST_F(Fixture, GroupTagIsKeptAsBatchSuffix) {
  auto pool = make(RunnerOptions{});
  for (const char* tag : {"-ruler", "other"}) {
    TaskResult r = pool.submit(job("test_scripted_repeat", std::string(R"({"tag": ")") + tag + "\"}", 4, 3)).get();
    ASSERT_TRUE(r.ok) << r.error;
    std::multiset<std::string> tids;
    for (const auto& e : r.experiences) tids.insert(e.eid.tid());
    const std::string second = tag[0] == '-' ? "7-ruler/3" : "7/3";
    EXPECT_EQ(tids, (std::multiset<std::string>{"7/3", "7/3", second, second})) << tag;
  }
}

TEST_F(Fixture, AuxiliaryModelsReachTheWorkflowAndAreCancelledWithTheAttempt) {
  RunnerOptions o;
  o.runners = 1;
  o.max_timeout = 0.2;
  o.max_retry_times = 0;
  std::vector<std::shared_ptr<testing::FakeModelClient>> auxes;
  std::mutex mu;
  RunnerPool pool(o, [&](const buffer::Task&, uint64_t) {
    auto c = std::make_shared<testing::FakeModelClient>(testing::byte_tokenizer(), std::vector<int32_t>{256});
    auto a = std::make_shared<testing::FakeModelClient>(testing::byte_tokenizer(), std::vector<int32_t>{256});
    {
      std::lock_guard<std::mutex> l(mu);
      auxes.push_back(a);
    }
    return AttemptClient{c, [c, a] { c->cancel = true, a->cancel = true; }, {a}};
  });
  TaskResult r = pool.submit(job("test_scripted_repeat", "{}", 2)).get();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_DOUBLE_EQ(r.metrics.at("aux"), 1.0);
  EXPECT_DOUBLE_EQ(r.metrics.at("aux_cancelled"), 0.0);
  TaskResult h = pool.submit(job("test_scripted_repeat", R"({"hang": true})", 1)).get();
  EXPECT_FALSE(h.ok);
  std::lock_guard<std::mutex> l(mu);
  EXPECT_TRUE(auxes.back()->cancel.load());
}

TEST_F(Fixture, RetriesUntilSuccessThenGivesUpWithReason) {
  RunnerOptions o;
  o.runners = 1;
  o.max_retry_times = 2;
  auto pool = make(o);
  TaskResult ok = pool.submit(job("test_scripted_repeat", R"({"fail": 2})", 2)).get();
  EXPECT_TRUE(ok.ok) << ok.error;
  EXPECT_EQ(ok.attempts, 3);
  g_calls = 0;
  TaskResult bad = pool.submit(job("test_scripted_repeat", R"({"fail": 10})", 2)).get();
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.attempts, 3);
  EXPECT_NE(bad.error.find("scripted failure"), std::string::npos) << bad.error;
  TaskResult empty = pool.submit(job("test_scripted", R"({"empty": true})", 2)).get();
  EXPECT_FALSE(empty.ok);
  EXPECT_NE(empty.error.find("returned no experiences"), std::string::npos) << empty.error;
  TaskResult unknown = pool.submit(job("no_such_workflow", "{}", 1)).get();
  EXPECT_FALSE(unknown.ok);
  EXPECT_NE(unknown.error.find("no_such_workflow"), std::string::npos) << unknown.error;
}

TEST_F(Fixture, HangingWorkflowTimesOutAndTheRunGoesOn) {
  RunnerOptions o;
  o.runners = 2;
  o.max_timeout = 0.2;
  o.max_retry_times = 1;
  o.cancel_grace = 0.5;
  auto pool = make(o);
  auto hang = pool.submit(job("test_scripted_repeat", R"({"hang": true})", 2, 0));
  auto good = pool.submit(job("test_scripted_repeat", "{}", 2, 1));
  const auto t0 = std::chrono::steady_clock::now();
  TaskResult h = hang.get();
  EXPECT_FALSE(h.ok);
  EXPECT_EQ(h.attempts, 2);
  EXPECT_EQ(h.error.rfind("timeout", 0), 0u) << h.error;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_TRUE(good.get().ok);
  EXPECT_EQ(pool.abandoned(), 0);
}

TEST_F(Fixture, WorkflowIgnoringCancellationIsAbandoned) {
  RunnerOptions o;
  o.runners = 1;
  o.max_timeout = 0.1;
  o.max_retry_times = 0;
  o.cancel_grace = 0.1;
  auto pool = make(o);
  TaskResult r = pool.submit(job("test_scripted_repeat", R"({"stuck": 1.0})", 1)).get();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(pool.abandoned(), 1);
  // The runner is free again at once.
  TaskResult next = pool.submit(job("test_scripted_repeat", "{}", 1)).get();
  EXPECT_TRUE(next.ok) << next.error;
  std::this_thread::sleep_for(1200ms);  // let the abandoned thread finish before the test ends
}

TEST_F(Fixture, DynamicTimeoutFollowsTheAverageTaskTime) {
  RunnerOptions o;
  o.runners = 1;
  o.max_timeout = 30;
  o.max_retry_times = 0;
  o.cancel_grace = 2;
  o.dynamic_timeout = true;
  o.dynamic_ratio = 3.0;
  o.dynamic_min_tasks = 2;
  auto pool = make(o);
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(pool.submit(job("test_scripted_repeat", R"({"sleep": 0.05})", 1)).get().ok);
  // Average ~0.05 s -> timeout ~0.15 s: a task of 1 s now times out instead of waiting 30 s.
  const auto t0 = std::chrono::steady_clock::now();
  TaskResult slow = pool.submit(job("test_scripted_repeat", R"({"hang": true})", 1)).get();
  EXPECT_FALSE(slow.ok);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
}

TEST_F(Fixture, ShutdownEndsQueuedTasks) {
  RunnerOptions o;
  o.runners = 1;
  o.max_timeout = 10;
  auto pool = make(o);
  auto running = pool.submit(job("test_scripted_repeat", R"({"hang": true})", 1));
  auto queued = pool.submit(job("test_scripted_repeat", "{}", 1));
  std::this_thread::sleep_for(50ms);
  pool.shutdown();
  EXPECT_FALSE(queued.get().ok);
  EXPECT_EQ(queued.get().error, "shutdown");
  EXPECT_FALSE(running.get().ok);
}

}  // namespace
}  // namespace trinity::explorer
