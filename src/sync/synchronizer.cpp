// Memory and checkpoint synchronizers (see synchronizer.h).
#include "sync/synchronizer.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <map>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "core/file.h"
#include "core/log.h"
#include "model/lora.h"

namespace trinity::sync {

const char* peer_state_name(PeerState s) {
  switch (s) {
    case PeerState::kUnknown: return "unknown";
    case PeerState::kRunning: return "running";
    case PeerState::kFinished: return "finished";
    case PeerState::kFailed: return "failed";
    case PeerState::kGone: return "gone";
  }
  return "?";
}

namespace {

std::string host_name() {
  char h[256] = {0};
  if (gethostname(h, sizeof h - 1) != 0) return "";
  return h;
}

using Clock = std::chrono::steady_clock;

class MemorySync : public Synchronizer {
 public:
  void publish(std::shared_ptr<const model::Transformer> w, int64_t version) override {
    std::lock_guard<std::mutex> l(mu_);
    latest_ = {std::move(w), version};
    cv_.notify_all();
  }
  WaitStatus wait_for(int64_t min_version, int64_t have, double timeout_s, Weights* out) override {
    std::unique_lock<std::mutex> l(mu_);
    auto trainer_done = [&] {
      auto it = states_.find("trainer");
      return it != states_.end() && (it->second.first == PeerState::kFinished || it->second.first == PeerState::kFailed);
    };
    const bool ok = cv_.wait_for(l, std::chrono::duration<double>(timeout_s),
                                 [&] { return (latest_.model && latest_.version >= min_version) || trainer_done(); });
    if (latest_.model && latest_.version >= min_version) {
      *out = latest_;
      return WaitStatus::kOk;
    }
    if (latest_.model && latest_.version > have) *out = latest_;
    if (!ok) return WaitStatus::kTimeout;
    return WaitStatus::kTrainerDone;
  }
  int64_t latest_version() override {
    std::lock_guard<std::mutex> l(mu_);
    return latest_.model ? latest_.version : -1;
  }
  void set_state(const std::string& role, PeerState s, const std::string& error) override {
    std::lock_guard<std::mutex> l(mu_);
    states_[role] = {s, error};
    cv_.notify_all();
  }
  PeerState state(const std::string& role, std::string* error) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = states_.find(role);
    if (it == states_.end()) return PeerState::kUnknown;
    if (error) *error = it->second.second;
    return it->second.first;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  Weights latest_;
  std::map<std::string, std::pair<PeerState, std::string>> states_;
};

int64_t read_iteration(const std::string& path) {
  if (!file::exists(path)) return -1;
  try {
    std::string s = file::read_all(path);
    return std::stoll(s);
  } catch (const std::exception&) {
    return -1;  // being replaced; read again on the next poll
  }
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      o += ' ';
      continue;
    }
    o += c;
  }
  return o;
}

// Extracts "key": "value" or "key": number from our own flat status JSON.
std::string field(const std::string& j, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  auto p = j.find(k);
  if (p == std::string::npos) return "";
  p += k.size();
  while (p < j.size() && j[p] == ' ') ++p;
  if (p < j.size() && j[p] == '"') {
    std::string v;
    for (++p; p < j.size() && j[p] != '"'; ++p) {
      if (j[p] == '\\' && p + 1 < j.size()) ++p;
      v += j[p];
    }
    return v;
  }
  auto e = j.find_first_of(",}", p);
  return j.substr(p, e - p);
}

class CheckpointSync : public Synchronizer {
 public:
  CheckpointSync(std::string job, std::string base_dir, double poll_s, std::shared_ptr<model::StepWeights> weights)
      : job_(std::move(job)),
        base_dir_(std::move(base_dir)),
        poll_s_(poll_s),
        weights_(weights ? std::move(weights) : std::make_shared<model::StepWeights>(base_dir_)) {
    file::make_dirs(job_);
  }
  void publish(std::shared_ptr<const model::Transformer> w, int64_t version) override {
    const std::string step = file::join(job_, strcat("global_step_", version));
    if (w->has_lora()) {  // the adapter only: the reader has the base (model/step_weights.h)
      const std::string dir = model::step_adapter_dir(step);
      if (!model::is_adapter_dir(dir)) {  // a full checkpoint of this step has it already
        file::make_dirs(file::join(step, "actor"));
        model::save_adapter(*w, dir, base_dir_);
      }
    } else {
      const std::string dir = file::join(step, "huggingface");
      if (!file::exists(file::join(dir, "config.json"))) {
        model::SaveOptions so;  // atomic directory write, tokenizer files copied: a complete HF model
        so.copy_tokenizer_from = base_dir_;
        model::save_merged(*w, dir, so);
      }
    }
    file::write_atomic(file::join(job_, "latest_state_dict_iteration.txt"), std::to_string(version));
  }
  WaitStatus wait_for(int64_t min_version, int64_t have, double timeout_s, Weights* out) override {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
    const std::string latest = file::join(job_, "latest_state_dict_iteration.txt");
    for (;;) {
      const int64_t v = read_iteration(latest);
      if (v >= min_version && v > have) {
        load(v, out);
        return WaitStatus::kOk;
      }
      std::string err;
      const PeerState ts = state("trainer", &err);
      if (ts == PeerState::kFinished) {
        if (v > have) load(v, out);
        return WaitStatus::kTrainerDone;
      }
      if (Clock::now() >= deadline) return WaitStatus::kTimeout;
      if (ts == PeerState::kFailed || ts == PeerState::kGone) {
        // The trainer process can be restarted alone: wait for it until the deadline, saying so.
        if (Clock::now() >= next_status_) {
          const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
          log::warn("explorer: the trainer has ", ts == PeerState::kGone ? "gone" : "failed", err.empty() ? "" : " (",
                    err, err.empty() ? "" : ")", "; waiting up to ", static_cast<int64_t>(left),
                    " s more (synchronizer.sync_timeout) for a trainer "
                    "process to resume this job: start `trinity run` with mode train again");
          next_status_ = Clock::now() + std::chrono::seconds(30);
        }
      } else {
        next_status_ = Clock::time_point{};
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(poll_s_));
    }
  }
  int64_t latest_version() override { return read_iteration(file::join(job_, "latest_state_dict_iteration.txt")); }
  bool peers_can_restart() const override { return true; }
  void set_state(const std::string& role, PeerState s, const std::string& error) override {
    const std::string j =
        strcat("{\"role\": \"", role, "\", \"state\": \"", peer_state_name(s),
               "\", \"pid\": ", static_cast<long>(getpid()), ", \"host\": \"", json_escape(host_name()),
               "\", \"time\": ", static_cast<long>(std::time(nullptr)), ", \"error\": \"", json_escape(error), "\"}\n");
    file::write_atomic(file::join(job_, role + "_status.json"), j);
  }
  PeerState state(const std::string& role, std::string* error) override {
    const std::string p = file::join(job_, role + "_status.json");
    if (!file::exists(p)) return PeerState::kUnknown;
    std::string j;
    try {
      j = file::read_all(p);
    } catch (const Error&) {
      return PeerState::kUnknown;
    }
    if (error) *error = field(j, "error");
    const std::string st = field(j, "state");
    if (st == "finished") return PeerState::kFinished;
    if (st == "failed") return PeerState::kFailed;
    if (st == "running") {
      // A process of another machine (several explorers, a shared job directory) cannot be checked
      // from here: it counts as running, and the reader's own deadline (max_read_timeout) applies.
      const std::string host = field(j, "host");
      if (!host.empty() && host != host_name()) return PeerState::kRunning;
      const long pid = std::atol(field(j, "pid").c_str());
      if (pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
        if (error) *error = strcat(role, " process (pid ", pid, ") is gone without finishing");
        return PeerState::kGone;
      }
      return PeerState::kRunning;
    }
    return PeerState::kUnknown;
  }

 private:
  void load(int64_t v, Weights* out) {
    out->model = weights_->load(file::join(job_, strcat("global_step_", v)));
    out->version = v;
  }
  std::string job_, base_dir_;
  double poll_s_;
  std::shared_ptr<model::StepWeights> weights_;
  Clock::time_point next_status_{};  // when to repeat the "waiting for the trainer" line
};

}  // namespace

std::unique_ptr<Synchronizer> make_memory_sync() { return std::make_unique<MemorySync>(); }

std::unique_ptr<Synchronizer> make_checkpoint_sync(const std::string& job_dir, const std::string& base_dir,
                                                   double poll_s, std::shared_ptr<model::StepWeights> weights) {
  return std::make_unique<CheckpointSync>(job_dir, base_dir, poll_s, std::move(weights));
}

}  // namespace trinity::sync
