// In-process experience queue (see queue_storage.h). One mutex guards everything; readers wait on one
// condition variable with a deadline bounded by the next lease expiry / cooldown re-insertion.
#include "buffer/queue_storage.h"

#include <algorithm>

#include "buffer/json_util.h"
#include "buffer/replay.h"
#include "core/error.h"

namespace trinity::buffer {

using detail::json;

QueueStorage::QueueStorage(const StorageConfig& cfg) : cfg_(cfg), rng_(static_cast<uint64_t>(cfg.data_selector.seed)), t0_(Clock::now()) {
  if (cfg_.capacity <= 0)
    throw ConfigError("buffer", strcat("queue '", cfg_.name, "': capacity must be > 0, got ", cfg_.capacity));
  if (cfg_.replay_buffer.enable) check_priority_fn(cfg_.replay_buffer);
  if (!cfg_.path.empty()) mirror_ = open_storage_url(cfg_.path);
}

QueueStorage::~QueueStorage() = default;

double QueueStorage::now() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

std::string QueueStorage::describe() const { return strcat("queue '", cfg_.name, "'"); }

void QueueStorage::insert_ready_locked(Experience e) {
  double prio = 0.0;
  if (cfg_.replay_buffer.enable) {
    const Priority p = replay_priority(cfg_.replay_buffer, e.model_version, e.use_count, rng_);
    if (!p.keep) return;
    prio = p.value;
    if (static_cast<int64_t>(held_locked()) >= cfg_.capacity && !ready_.empty()) {
      auto lowest = std::prev(ready_.end());
      if (prio < lowest->first.priority) return;  // full and lower than everything held: dropped
      ready_.erase(lowest);
    }
  }
  ready_.emplace(Key{prio, seq_++}, std::move(e));
}

void QueueStorage::maintain_locked() {
  const double t = now();
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (it->second.expires <= t) {
      for (auto& e : it->second.items) insert_ready_locked(std::move(e));
      it = leases_.erase(it);
    } else {
      ++it;
    }
  }
  while (!cooling_.empty() && cooling_.begin()->first <= t && !closed_) {
    insert_ready_locked(std::move(cooling_.begin()->second));
    cooling_.erase(cooling_.begin());
  }
}

bool QueueStorage::write(const std::vector<Experience>& batch, double timeout_s) {
  if (batch.empty()) return true;
  std::unique_lock<std::mutex> lock(mu_);
  if (closed_) throw ValueError("buffer", strcat(describe(), ": write after close"));
  if (!cfg_.replay_buffer.enable) {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
    // A batch larger than the capacity is admitted into an empty queue rather than blocking forever.
    auto fits = [&] {
      return held_locked() == 0 || static_cast<int64_t>(held_locked() + batch.size()) <= cfg_.capacity;
    };
    while (!fits()) {
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && !fits()) return false;
    }
  }
  if (mirror_) mirror_->write(batch, timeout_s);
  for (const auto& e : batch) {
    if (e.pending()) {
      pending_[e.eid.uid()] = e;
    } else {
      insert_ready_locked(e);
    }
  }
  cv_.notify_all();
  return true;
}

ReadResult QueueStorage::read(const ReadRequest& req) {
  TRINITY_ASSERT(req.batch_size > 0, "batch_size must be > 0");
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(req.timeout_s));
  ReadResult r;
  for (;;) {
    maintain_locked();
    if (req.min_model_version) {  // stale experiences are discarded, as Trinity's queue does
      for (auto it = ready_.begin(); it != ready_.end();)
        it = it->second.model_version < *req.min_model_version ? ready_.erase(it) : std::next(it);
    }
    const bool drained = closed_ && pending_.empty() && leases_.empty();
    if (ready_.size() >= req.batch_size) {
      r.status = ReadStatus::kOk;
      break;
    }
    if (drained) {
      r.status = ReadStatus::kClosed;
      break;
    }
    auto wake = deadline;
    if (Clock::now() >= deadline) {
      r.status = ReadStatus::kTimeout;
      if (!req.allow_partial) return r;
      break;
    }
    // Wake early for the next lease expiry or cooldown re-insertion.
    double next = 1e300;
    for (const auto& [id, l] : leases_) next = std::min(next, l.expires);
    if (!cooling_.empty()) next = std::min(next, cooling_.begin()->first);
    if (next < 1e299) {
      const auto t = t0_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(next));
      wake = std::min(wake, t + std::chrono::milliseconds(1));
    }
    cv_.wait_until(lock, wake);
  }
  const size_t n = std::min(req.batch_size, ready_.size());
  if (n == 0) return r;
  Lease lease;
  lease.expires = now() + cfg_.lease_timeout;
  for (size_t i = 0; i < n; ++i) {
    auto it = ready_.begin();
    lease.items.push_back(it->second);
    Experience out = std::move(it->second);
    out.use_count += 1;
    r.batch.push_back(std::move(out));
    ready_.erase(it);
  }
  r.lease = strcat("q", ++lease_seq_);
  leases_.emplace(r.lease, std::move(lease));
  cv_.notify_all();  // writers waiting for room
  return r;
}

bool QueueStorage::renew(const std::string& lease) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = leases_.find(lease);
  if (it == leases_.end()) return false;
  it->second.expires = now() + cfg_.lease_timeout;
  return true;
}

bool QueueStorage::ack(const std::string& lease) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = leases_.find(lease);
  if (it == leases_.end()) return false;  // already acked, or expired and given back
  consumed_ += static_cast<int64_t>(it->second.items.size());
  const auto& rb = cfg_.replay_buffer;
  if (rb.enable && rb.reuse_cooldown_time && !closed_) {
    const double t = now() + *rb.reuse_cooldown_time;
    for (auto& e : it->second.items) {
      e.use_count += 1;
      cooling_.emplace(t, std::move(e));
    }
  }
  leases_.erase(it);
  cv_.notify_all();
  return true;
}

void QueueStorage::release(const std::string& lease) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = leases_.find(lease);
  if (it == leases_.end()) return;
  for (auto& e : it->second.items) insert_ready_locked(std::move(e));
  leases_.erase(it);
  cv_.notify_all();
}

size_t QueueStorage::set_reward(const std::vector<std::string>& uids, double reward) {
  if (mirror_) mirror_->set_reward(uids, reward);
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& uid : uids) {
    auto it = pending_.find(uid);
    if (it == pending_.end()) continue;
    it->second.reward = reward;
    insert_ready_locked(std::move(it->second));
    pending_.erase(it);
    ++n;
  }
  if (n) cv_.notify_all();
  return n;
}

size_t QueueStorage::set_group_reward(const std::string& group_id, double reward) {
  if (mirror_) mirror_->set_group_reward(group_id, reward);
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (auto it = pending_.begin(); it != pending_.end();) {
    const Eid& id = it->second.eid;
    if (id.tid() == group_id || id.rid() == group_id) {
      it->second.reward = reward;
      insert_ready_locked(std::move(it->second));
      it = pending_.erase(it);
      ++n;
    } else {
      ++it;
    }
  }
  if (n) cv_.notify_all();
  return n;
}

void QueueStorage::acquire() {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) throw ValueError("buffer", strcat(describe(), ": acquire after close"));
  ++writers_;
}

void QueueStorage::close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (writers_ > 1) {  // other writers still hold the queue open
    --writers_;
    return;
  }
  writers_ = 0;
  closed_ = true;
  cooling_.clear();  // closing disables reuse
  cv_.notify_all();
}

StorageStats QueueStorage::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  StorageStats s;
  s.pending = static_cast<int64_t>(pending_.size());
  s.ready = static_cast<int64_t>(ready_.size() + cooling_.size());
  for (const auto& [id, l] : leases_) s.leased += static_cast<int64_t>(l.items.size());
  s.consumed = consumed_;
  s.total = s.pending + s.ready + s.leased;
  auto add = [&](const Experience& e) {
    s.by_model_version[e.model_version]++;
    if (e.reward) s.rewards.push_back(*e.reward);
  };
  for (const auto& [k, e] : ready_) add(e);
  for (const auto& [k, e] : pending_) add(e);
  for (const auto& [k, e] : cooling_) add(e);
  for (const auto& [id, l] : leases_)
    for (const auto& e : l.items) add(e);
  return s;
}

std::vector<Experience> QueueStorage::scan(int64_t offset, int64_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Experience> all;
  for (const auto& [k, e] : ready_) all.push_back(e);
  for (const auto& [k, e] : pending_) all.push_back(e);
  std::vector<Experience> out;
  for (int64_t i = offset; i < static_cast<int64_t>(all.size()) && static_cast<int64_t>(out.size()) < limit; ++i)
    out.push_back(all[static_cast<size_t>(i)]);
  return out;
}

std::string QueueStorage::state() {
  std::lock_guard<std::mutex> lock(mu_);
  json j = {{"kind", "queue"}, {"leases", json::array()}};
  for (const auto& [id, l] : leases_) j["leases"].push_back(id);
  return j.dump();
}

void QueueStorage::load_state(const std::string& state) {
  const json j = detail::parse_json(state, describe() + " state");
  if (!j.is_object() || j.value("kind", "") != "queue")
    throw ValueError("buffer", strcat(describe(), ": state is not a queue reader state: ", state));
  // Leases named by a checkpoint were trained on; ack those this process still holds.
  for (const auto& l : j.at("leases")) ack(l.get<std::string>());
}

}  // namespace trinity::buffer
