// Task selection (trinity-rft.md §4.5): per-taskset selectors and the scheduler that mixes several
// tasksets proportionally to their sizes.
//   sequential: row = i mod N;  shuffle: row = perm_{seed+epoch}[i mod N] with epoch = i / N;
//   random: each read of k rows draws k distinct rows with seed + current_index (independent reads);
//   offline_easy2hard: rows sorted by feature_keys descending, then sequential;
//   difficulty_based: BOTS (difficulty_estimator.h), fed through feedback() with the mean reward of
//   each explored row (the pass_rate_calculator experience operator).
// The scheduler builds, per epoch e, the list of taskset ids (id i repeated N_i times) shuffled with seed
// e, takes batch_size ids per step and reads that many tasks from each taskset. Steps end at total_steps,
// or total_epochs * sum(N_i) / batch_size (a last partial batch is dropped; eval keeps it). The state
// (step and per-taskset current_index, plus BOTS' estimator) resumes the exact sequence.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "buffer/dataset.h"
#include "buffer/difficulty_estimator.h"

namespace trinity::buffer {

// ConfigError naming the taskset when its data_selector is unknown or incomplete (selector type,
// feature_keys, difficulty_based kwargs). Run by `trinity config check` and when a reader is made.
void check_selector(const TasksetConfig& t);

class TasksetReader {
 public:
  explicit TasksetReader(std::shared_ptr<const Taskset> ts);
  // The next n tasks (wrapping around the taskset) in selector order; advances current_index by n.
  std::vector<Task> read(size_t n);
  int64_t current_index() const { return index_; }
  void set_current_index(int64_t i) { index_ = i; }
  const Taskset& taskset() const { return *ts_; }
  // BOTS feedback (difficulty_based only; other selectors ignore it).
  void feedback(const std::vector<int64_t>& rows, const std::vector<double>& pass_rates);
  const DifficultyEstimator* estimator() const { return est_.get(); }
  // {"current_index": i} plus "estimator" for difficulty_based.
  std::string state() const;
  void load_state(const std::string& state);

 private:
  int64_t row_at(int64_t i);  // sequential / shuffle / easy2hard
  std::shared_ptr<const Taskset> ts_;
  std::string kind_;
  int64_t index_ = 0;
  int64_t perm_epoch_ = -1;
  std::vector<int64_t> perm_;
  std::unique_ptr<DifficultyEstimator> est_;
};

class TasksetScheduler {
 public:
  // batch_size = tasks per explore step. Throws ConfigError on a bad selector or empty list.
  TasksetScheduler(std::vector<std::shared_ptr<const Taskset>> tasksets, int64_t batch_size,
                   int64_t total_epochs = 1, std::optional<int64_t> total_steps = std::nullopt,
                   bool is_eval = false);
  // Tasks of the next step, or nullopt when all steps are done.
  std::optional<std::vector<Task>> next_batch();
  int64_t step() const { return step_; }
  int64_t max_steps() const { return max_steps_; }
  std::string state() const;  // {"step": s, "taskset_states": [{"current_index": i}, ...]}
  void load_state(const std::string& state);
  // Feedback of one explore step for taskset `taskset_id` (rows and their mean rewards).
  void feedback(int64_t taskset_id, const std::vector<int64_t>& rows, const std::vector<double>& pass_rates);
  bool wants_feedback() const;  // some taskset is difficulty_based
  // `position` (a state() taken when a step's tasks were read) with every estimator replaced by the
  // live one: the state to save once that step's feedback has been given.
  std::string state_with_live_estimators(const std::string& position) const;

 private:
  const std::vector<int64_t>& epoch_ids(int64_t epoch) const;
  std::vector<std::unique_ptr<TasksetReader>> readers_;
  int64_t batch_size_, total_len_ = 0, max_steps_ = 0, step_ = 0;
  bool is_eval_;
  mutable int64_t ids_epoch_ = -1;
  mutable std::vector<int64_t> ids_;
};

}  // namespace trinity::buffer
