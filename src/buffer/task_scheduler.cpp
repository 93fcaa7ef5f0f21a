// Selectors and the taskset scheduler (see task_scheduler.h).
#include "buffer/task_scheduler.h"

#include <algorithm>
#include <numeric>

#include "buffer/json_util.h"
#include "core/error.h"
#include "core/names.h"
#include "core/rng.h"

namespace trinity::buffer {

using detail::json;

namespace {

// Fisher-Yates with the deterministic trinity::Rng.
void shuffle(std::vector<int64_t>& v, uint64_t seed) {
  Rng rng(seed);
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

}  // namespace

void check_selector(const TasksetConfig& t) {
  const SelectorConfig& sel = t.data_selector;
  const std::vector<std::string> kinds = {"sequential", "shuffle", "random", "offline_easy2hard", "difficulty_based"};
  if (std::find(kinds.begin(), kinds.end(), sel.selector_type) == kinds.end())
    throw ConfigError("buffer",
                      strcat("taskset '", t.name, "': data_selector.selector_type '", sel.selector_type, "' is unknown",
                             did_you_mean_suffix(sel.selector_type, kinds), "; expected ", join_names(kinds)));
  if (sel.selector_type == "offline_easy2hard" && sel.feature_keys.empty())
    throw ConfigError("buffer", strcat("taskset '", t.name, "': offline_easy2hard needs data_selector.feature_keys"));
  if (sel.selector_type == "difficulty_based") {
    if (sel.feature_keys.size() != 2)
      throw ConfigError("buffer", strcat("taskset '", t.name, "': difficulty_based needs exactly 2 ",
                                         "data_selector.feature_keys (the pass rates of a weaker and a stronger ",
                                         "reference model), got ", sel.feature_keys.size()));
    DifficultyParams::from_kwargs(sel.kwargs, t.name);
  }
}

TasksetReader::TasksetReader(std::shared_ptr<const Taskset> ts) : ts_(std::move(ts)) {
  const SelectorConfig& sel = ts_->config().data_selector;
  kind_ = sel.selector_type;
  check_selector(ts_->config());
  TRINITY_ASSERT(ts_->size() > 0, "empty taskset");
  if (kind_ == "difficulty_based") {
    std::vector<std::array<double, 2>> f;
    f.reserve(ts_->size());
    for (const auto& row : ts_->features()) f.push_back({row.at(0), row.at(1)});
    TRINITY_ASSERT(f.size() == ts_->size(), "difficulty_based taskset without its feature columns");
    est_ = std::make_unique<DifficultyEstimator>(std::move(f),
                                                 DifficultyParams::from_kwargs(sel.kwargs, ts_->config().name));
  }
}

void TasksetReader::feedback(const std::vector<int64_t>& rows, const std::vector<double>& pass_rates) {
  if (est_) est_->feedback(rows, pass_rates);
}

std::string TasksetReader::state() const {
  json j = {{"current_index", index_}};
  if (est_) j["estimator"] = json::parse(est_->state());
  return j.dump();
}

void TasksetReader::load_state(const std::string& state) {
  const json j = detail::parse_json(state, "taskset state");
  index_ = j.at("current_index").get<int64_t>();
  if (est_ && j.contains("estimator"))
    est_->load_state(j.at("estimator").dump(), strcat("taskset '", ts_->config().name, "' state"));
}

int64_t TasksetReader::row_at(int64_t i) {
  const auto n = static_cast<int64_t>(ts_->size());
  if (kind_ == "offline_easy2hard") return ts_->easy2hard_order()[static_cast<size_t>(i % n)];
  if (kind_ == "shuffle") {
    const int64_t epoch = i / n;
    if (epoch != perm_epoch_) {
      perm_.resize(static_cast<size_t>(n));
      std::iota(perm_.begin(), perm_.end(), 0);
      shuffle(perm_, static_cast<uint64_t>(ts_->config().data_selector.seed + epoch));
      perm_epoch_ = epoch;
    }
    return perm_[static_cast<size_t>(i % n)];
  }
  return i % n;
}

std::vector<Task> TasksetReader::read(size_t k) {
  std::vector<Task> out;
  out.reserve(k);
  const auto n = static_cast<int64_t>(ts_->size());
  if (est_) {
    // BOTS: the k rows closest to the target (k > N wraps: the whole taskset, then the rest again).
    for (size_t left = k; left > 0;) {
      const size_t take = std::min(left, ts_->size());
      for (int64_t r : est_->select(take, static_cast<uint64_t>(ts_->config().data_selector.seed), index_))
        out.push_back(ts_->at(static_cast<size_t>(r)));
      left -= take;
    }
  } else if (kind_ == "random") {
    // Distinct rows within one read (when k <= N), independent across reads.
    std::vector<int64_t> rows(static_cast<size_t>(n));
    std::iota(rows.begin(), rows.end(), 0);
    shuffle(rows, static_cast<uint64_t>(ts_->config().data_selector.seed + index_));
    for (size_t j = 0; j < k; ++j) out.push_back(ts_->at(static_cast<size_t>(rows[j % rows.size()])));
  } else {
    for (size_t j = 0; j < k; ++j) out.push_back(ts_->at(static_cast<size_t>(row_at(index_ + static_cast<int64_t>(j)))));
  }
  index_ += static_cast<int64_t>(k);
  return out;
}

TasksetScheduler::TasksetScheduler(std::vector<std::shared_ptr<const Taskset>> tasksets, int64_t batch_size,
                                   int64_t total_epochs, std::optional<int64_t> total_steps, bool is_eval)
    : batch_size_(batch_size), is_eval_(is_eval) {
  if (tasksets.empty()) throw ConfigError("buffer", "no tasksets to schedule");
  if (batch_size <= 0) throw ConfigError("buffer", strcat("buffer.batch_size must be > 0, got ", batch_size));
  if (total_epochs <= 0 && !total_steps)
    throw ConfigError("buffer", strcat("buffer.total_epochs must be > 0, got ", total_epochs));
  for (auto& t : tasksets) {
    total_len_ += static_cast<int64_t>(t->size());
    readers_.push_back(std::make_unique<TasksetReader>(std::move(t)));
  }
  if (total_steps) {
    if (*total_steps < 0) throw ConfigError("buffer", strcat("buffer.total_steps must be >= 0, got ", *total_steps));
    max_steps_ = *total_steps;
  } else if (is_eval_) {
    max_steps_ = (total_len_ + batch_size - 1) / batch_size;
  } else {
    max_steps_ = total_epochs * total_len_ / batch_size;
  }
}

const std::vector<int64_t>& TasksetScheduler::epoch_ids(int64_t epoch) const {
  if (epoch != ids_epoch_) {
    ids_.clear();
    for (size_t i = 0; i < readers_.size(); ++i)
      ids_.insert(ids_.end(), readers_[i]->taskset().size(), static_cast<int64_t>(i));
    if (readers_.size() > 1) shuffle(ids_, static_cast<uint64_t>(epoch));
    ids_epoch_ = epoch;
  }
  return ids_;
}

std::optional<std::vector<Task>> TasksetScheduler::next_batch() {
  if (step_ >= max_steps_) return std::nullopt;
  std::vector<size_t> counts(readers_.size(), 0);
  int64_t take = batch_size_;
  if (is_eval_) take = std::min<int64_t>(batch_size_, total_len_ - step_ * batch_size_);
  for (int64_t p = step_ * batch_size_; p < step_ * batch_size_ + take; ++p) {
    const std::vector<int64_t>& ids = epoch_ids(p / total_len_);
    counts[static_cast<size_t>(ids[static_cast<size_t>(p % total_len_)])]++;
  }
  std::vector<Task> out;
  for (size_t i = 0; i < readers_.size(); ++i) {
    if (!counts[i]) continue;
    for (auto& t : readers_[i]->read(counts[i])) out.push_back(std::move(t));
  }
  ++step_;
  return out;
}

std::string TasksetScheduler::state() const {
  json j = {{"step", step_}, {"taskset_states", json::array()}};
  for (const auto& r : readers_) j["taskset_states"].push_back(json::parse(r->state()));
  return j.dump();
}

void TasksetScheduler::load_state(const std::string& state) {
  const json j = detail::parse_json(state, "taskset scheduler state");
  if (!j.is_object() || !j.contains("step") || !j.contains("taskset_states") ||
      j.at("taskset_states").size() != readers_.size())
    throw ValueError("buffer", strcat("taskset scheduler state does not match ", readers_.size(),
                                      " taskset(s): ", state.substr(0, 200)));
  step_ = j.at("step").get<int64_t>();
  for (size_t i = 0; i < readers_.size(); ++i) readers_[i]->load_state(j.at("taskset_states")[i].dump());
}

void TasksetScheduler::feedback(int64_t taskset_id, const std::vector<int64_t>& rows,
                                const std::vector<double>& pass_rates) {
  for (auto& r : readers_)
    if (r->taskset().config().index == taskset_id) return r->feedback(rows, pass_rates);
  throw ValueError("buffer", strcat("selector feedback for taskset id ", taskset_id, ", which is not scheduled"));
}

bool TasksetScheduler::wants_feedback() const {
  for (const auto& r : readers_)
    if (r->estimator()) return true;
  return false;
}

std::string TasksetScheduler::state_with_live_estimators(const std::string& position) const {
  if (!wants_feedback()) return position;
  json j = detail::parse_json(position, "taskset scheduler state");
  for (size_t i = 0; i < readers_.size(); ++i)
    if (readers_[i]->estimator()) j["taskset_states"][i]["estimator"] = json::parse(readers_[i]->estimator()->state());
  return j.dump();
}

}  // namespace trinity::buffer
