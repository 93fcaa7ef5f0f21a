// Trainer-side batch sources and the train loop (see train_loop.h).
#include "launcher/train_loop.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/console.h"
#include "core/error.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "launcher/dist_train.h"
#include "monitor/monitor.h"
#include "monitor/progress.h"
#include "sync/synchronizer.h"
#include "trainer/checkpoint_io.h"

namespace trinity::launcher {

using nlohmann::json;

namespace {

class StorageSource : public BatchSource {
 public:
  StorageSource(buffer::ExperienceStorage* s, int64_t bs, double max_wait, sync::Synchronizer* sync,
                std::optional<int64_t> staleness, const std::atomic<bool>* stop)
      : s_(s), bs_(bs), max_wait_(max_wait), sync_(sync), staleness_(staleness), stop_(stop) {}

  bool next(std::vector<buffer::Experience>& out, int64_t step) override {
    Timer waited;
    next_status_s_ = 0;
    for (;;) {
      // The batches trained since the last checkpoint stay leased until it commits them; renew their
      // leases on every read (at most ~1 s apart), also while waiting for an explorer, or they expire
      // and come back as new experiences (trained twice).
      for (const auto& l : leases_) s_->renew(l);
      if (stop_ && stop_->load()) return false;
      buffer::ReadRequest r;
      r.batch_size = static_cast<size_t>(bs_);
      r.timeout_s = 1.0;
      if (staleness_) r.min_model_version = std::max<int64_t>(0, step - 1 - *staleness_);
      buffer::ReadResult res = s_->read(r);
      if (res.status == buffer::ReadStatus::kOk || (res.status == buffer::ReadStatus::kClosed && !res.batch.empty())) {
        take(res, out);
        return true;
      }
      if (res.status == buffer::ReadStatus::kClosed) return false;
      // Ctrl-C: stop before looking at the explorer, which reports itself failed ("stopped by the
      // user") when the same stop flag ended it; that is a clean stop here, not an error.
      if (stop_ && stop_->load()) return false;
      // Timeout: is anyone still writing?
      std::string err;
      const sync::PeerState ps = sync_ ? sync_->state("explorer", &err) : sync::PeerState::kUnknown;
      const bool peer_down = ps == sync::PeerState::kFailed || ps == sync::PeerState::kGone;
      if (peer_down && sync_->peers_can_restart()) {
        // Two processes: the explorer can be restarted alone and resumes writing; wait for it until
        // max_read_timeout instead of ending the run on a partial batch.
        if (waited.seconds() >= next_status_s_) {
          log::warn("trainer: the explorer has ", ps == sync::PeerState::kGone ? "gone" : "failed",
                    err.empty() ? "" : " (", err, err.empty() ? "" : ")", "; waiting up to ",
                    static_cast<int64_t>(std::max(0.0, max_wait_ - waited.seconds())),
                    " s more (buffer.trainer_input.experience_buffer.max_read_timeout) for an explorer process to "
                    "resume this job: start `trinity run` with mode explore again");
          next_status_s_ = waited.seconds() + 30;
        }
      } else if (ps == sync::PeerState::kFinished || peer_down) {
        r.allow_partial = true;
        r.timeout_s = 0.2;
        res = s_->read(r);
        if (!res.batch.empty()) {
          log::info("trainer: the explorer has ", sync::peer_state_name(ps), "; training on the last ", res.batch.size(),
                    " experiences");
          take(res, out);
          return true;
        }
        if (ps != sync::PeerState::kFinished)
          throw Error("trainer", strcat("the explorer ", sync::peer_state_name(ps), err.empty() ? "" : ": ", err,
                                        "; no more experiences will come"));
        return false;
      }
      if (waited.seconds() > max_wait_)
        throw Error("trainer", strcat("waited buffer.trainer_input.experience_buffer.max_read_timeout = ", max_wait_,
                                      " s for ", bs_, " experiences from ", s_->describe(), " (explorer state: ",
                                      sync::peer_state_name(ps), ")"));
    }
  }
  std::string state() override { return s_->state(); }
  void load_state(const std::string& st) override { s_->load_state(st); }
  void committed() override {
    for (const auto& l : leases_) s_->ack(l);
    leases_.clear();
  }

 private:
  void take(buffer::ReadResult& res, std::vector<buffer::Experience>& out) {
    out = std::move(res.batch);
    if (!res.lease.empty()) leases_.push_back(res.lease);
  }
  buffer::ExperienceStorage* s_;
  int64_t bs_;
  double max_wait_;
  sync::Synchronizer* sync_;
  std::optional<int64_t> staleness_;
  const std::atomic<bool>* stop_;
  std::vector<std::string> leases_;
  double next_status_s_ = 0;  // seconds into a wait when the "waiting for the explorer" line repeats
};

class DatasetSource : public BatchSource {
 public:
  DatasetSource(std::vector<buffer::Experience> data, int64_t bs, int64_t epochs, std::optional<int64_t> steps)
      : data_(std::move(data)), bs_(bs), epochs_(epochs), steps_(steps) {
    if (data_.empty()) throw ValueError("trainer", "the training dataset has no usable rows");
  }
  bool next(std::vector<buffer::Experience>& out, int64_t) override {
    const int64_t n = static_cast<int64_t>(data_.size());
    if (pos_ + bs_ > (steps_ ? bs_ * *steps_ : n * epochs_)) return false;
    out.clear();
    for (int64_t i = 0; i < bs_; ++i) out.push_back(data_[static_cast<size_t>((pos_ + i) % n)]);
    pos_ += bs_;
    return true;
  }
  std::string state() override { return json{{"kind", "dataset"}, {"position", pos_}}.dump(); }
  void load_state(const std::string& st) override {
    try {
      pos_ = json::parse(st).at("position").get<int64_t>();
    } catch (const json::exception& e) {
      throw IoError("trainer", strcat("bad dataset position in the checkpoint state: ", st));
    }
  }
  std::optional<int64_t> total_steps() const override {
    if (steps_) return *steps_;
    return static_cast<int64_t>(data_.size()) * epochs_ / bs_;
  }

 private:
  std::vector<buffer::Experience> data_;
  int64_t bs_, epochs_, pos_ = 0;
  std::optional<int64_t> steps_;  // buffer.total_steps: batch_size x steps samples, wrapping around the data
};

class MixSource : public BatchSource {
 public:
  MixSource(std::unique_ptr<BatchSource> usual, std::unique_ptr<BatchSource> expert)
      : usual_(std::move(usual)), expert_(std::move(expert)) {}
  bool next(std::vector<buffer::Experience>& out, int64_t step) override {
    if (!usual_->next(out, step)) return false;
    std::vector<buffer::Experience> ex;
    if (!expert_->next(ex, step)) return false;
    for (auto& e : ex) out.push_back(std::move(e));
    return true;
  }
  std::string state() override {
    return json{{"usual", json::parse(usual_->state())}, {"expert", json::parse(expert_->state())}}.dump();
  }
  void load_state(const std::string& st) override {
    json j;
    try {
      j = json::parse(st);
    } catch (const json::exception&) {
      throw IoError("trainer", strcat("bad mix source state in the checkpoint: ", st));
    }
    if (!j.is_object() || !j.contains("usual") || !j.contains("expert"))
      throw IoError("trainer", strcat("the checkpoint's data state is not a mix state (was sample_strategy changed?): ",
                                      st.substr(0, 200)));
    usual_->load_state(j["usual"].dump());
    expert_->load_state(j["expert"].dump());
  }
  void committed() override {
    usual_->committed();
    expert_->committed();
  }

 private:
  std::unique_ptr<BatchSource> usual_, expert_;
};

}  // namespace

std::unique_ptr<BatchSource> mix_source(std::unique_ptr<BatchSource> usual, std::unique_ptr<BatchSource> expert) {
  return std::make_unique<MixSource>(std::move(usual), std::move(expert));
}

std::unique_ptr<BatchSource> storage_source(buffer::ExperienceStorage* storage, int64_t batch_size,
                                            double max_read_timeout, sync::Synchronizer* sync,
                                            std::optional<int64_t> staleness, const std::atomic<bool>* stop) {
  return std::make_unique<StorageSource>(storage, batch_size, max_read_timeout, sync, staleness, stop);
}

std::unique_ptr<BatchSource> dataset_source(std::vector<buffer::Experience> data, int64_t batch_size,
                                            int64_t total_epochs, std::optional<int64_t> total_steps) {
  return std::make_unique<DatasetSource>(std::move(data), batch_size, total_epochs, total_steps);
}

TrainLoopResult train_loop(trainer::PolicyTrainer& tr, BatchSource& src, const TrainLoopOptions& opt,
                           int64_t start_step, monitor::Monitor* mon, sync::Synchronizer* sync,
                           const std::atomic<bool>* stop) {
  TrainLoopResult res;
  dist::Comm* comm = tr.options().comm;
  int64_t step = start_step, saved = start_step, published = -1, warned_lag = -1;
  auto save = [&](int64_t s) {
    Timer t;
    const json extra = {{"source", json::parse(src.state())}};
    trainer::CheckpointOptions co;
    co.tokenizer_dir = opt.tokenizer_dir;
    co.max_checkpoints_to_keep = opt.max_checkpoints_to_keep;
    co.hf_dtype = opt.hf_dtype;
    res.last_checkpoint = trainer::save_trainer_checkpoint(opt.job_dir, s, tr, extra.dump(), co);
    src.committed();
    saved = s;
    if (mon) mon->log({{"time/save_checkpoint", t.seconds()}}, s);
  };
  int64_t total = opt.total_steps;
  if (total <= 0 && src.total_steps()) total = *src.total_steps();
  std::unique_ptr<monitor::ProgressBar> bar;
  if (opt.progress && total > 0) {
    bar = std::make_unique<monitor::ProgressBar>("train", total);
    bar->update(step);
  }
  for (;;) {
    if (stop && stop->load()) {
      res.stopped = true;
      break;
    }
    if (total > 0 && step >= total) break;
    std::vector<buffer::Experience> batch;
    Timer tr_read;
    if (!src.next(batch, step + 1)) {
      if (stop && stop->load()) res.stopped = true;
      break;
    }
    const double read_s = tr_read.seconds();
    const RoleBusy busy(thread_role());  // until the next read: the explorer runs on its share meanwhile
    ++step;
    Timer t;
    // Experiences without a response token (a prompt that filled the context) carry nothing to
    // train on; a batch of only those is a step without an update, not a failed run.
    if (opt.expected_lag >= 0 && !batch.empty()) {
      int64_t oldest = batch[0].model_version;
      for (const auto& e : batch) oldest = std::min(oldest, e.model_version);
      const int64_t lag = step - 1 - oldest;
      if (lag > opt.expected_lag && lag > warned_lag) {
        log::warn("trainer: step ", step, " trains on experiences of model version ", oldest, " (", lag,
                  " versions behind; the sync schedule allows ", opt.expected_lag, ")");
        warned_lag = lag;
      }
    }
    const size_t got = batch.size();
    batch.erase(std::remove_if(batch.begin(), batch.end(),
                               [](const buffer::Experience& e) { return e.chosen.empty() && e.response_length() <= 0; }),
                batch.end());
    const size_t empty = got - batch.size();
    std::map<std::string, double> m;
    if (batch.empty()) {
      log::warn("trainer: step ", step, ": all ", got, " experiences have an empty response (prompt too long for ",
                "max_model_len?); no update this step");
    } else {
      if (comm) lead_step(*comm, step, batch);  // the other ranks train on the same mini-batch
      m = tr.train_step(std::move(batch), step);
    }
    m["sample/empty_response_count"] = static_cast<double>(empty);
    m["time/read_experience"] = read_s;
    if (opt.save_interval > 0 && step % opt.save_interval == 0) save(step);
    if (sync && step % std::max<int64_t>(1, opt.sync_interval) == 0) {
      Timer ts;
      sync->publish(tr.snapshot(), step);
      published = step;
      m["time/sync_weight"] = ts.seconds();
    }
    if (mon) mon->log(m, step);
    const int64_t every = total > 0 ? std::max<int64_t>(1, total / 20) : 1;
    if (step % every == 0 || step == total || step - start_step <= 2)
      console::Console::err().line(
          monitor::summary_line("trainer", step, m,
                                {"reward=critic/score/mean", "actor/pg_loss", "actor/kl_loss", "actor/sft_loss",
                                 "actor/dpo_loss", "actor/grad_norm", "response_length/mean"},
                                t.seconds()));
    if (bar) bar->update(step);
  }
  if (step > saved) save(step);
  if (res.last_checkpoint.empty() && step > 0) res.last_checkpoint = trainer::global_step_dir(opt.job_dir, step);
  if (sync && step > 0 && published != step) sync->publish(tr.snapshot(), step);
  if (bar) bar->finish();
  if (comm) lead_end_trainer(*comm);
  res.steps = step;
  return res;
}

}  // namespace trinity::launcher
