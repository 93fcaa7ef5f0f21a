// ProgressBar and summary_line (see progress.h). Numbers use %.4g so losses like -0.0123 and
// rewards like 0.41 both read naturally.
#include "monitor/progress.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>

namespace trinity::monitor {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  char buf[48];
  if (s >= 3600)
    std::snprintf(buf, sizeof(buf), "%" PRId64 ":%02d:%02d", s / 3600, int(s / 60 % 60), int(s % 60));
  else
    std::snprintf(buf, sizeof(buf), "%02d:%02d", int(s / 60), int(s % 60));
  return buf;
}

ProgressBar::ProgressBar(std::string label, int64_t total, ProgressOptions opts)
    : ProgressBar(std::move(label), total, console::Console::err(), std::move(opts)) {}

ProgressBar::ProgressBar(std::string label, int64_t total, console::Console& console, ProgressOptions opts)
    : console_(&console), label_(std::move(label)), total_(total), tty_(console.terminal()), opts_(std::move(opts)) {
  if (tty_) status_id_ = console_->open_status();
}

ProgressBar::ProgressBar(std::string label, int64_t total, bool tty, Sink sink, ProgressOptions opts)
    : own_console_(std::make_unique<console::Console>(tty, false, std::move(sink))),
      console_(own_console_.get()),
      label_(std::move(label)),
      total_(total),
      tty_(tty),
      opts_(std::move(opts)) {
  if (tty_) status_id_ = console_->open_status();
}

ProgressBar::~ProgressBar() {
  std::lock_guard<std::mutex> lock(mu_);
  if (tty_ && !finished_) console_->close_status(status_id_, true);
}

std::string ProgressBar::render(int64_t done, double elapsed_s) const {
  std::string s = label_;
  s.append("  ").append(std::to_string(done));
  const double rate = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0.0;
  if (total_ > 0) {
    s.append("/").append(std::to_string(total_));
    const double frac = std::clamp(static_cast<double>(done) / static_cast<double>(total_), 0.0, 1.0);
    const int filled = static_cast<int>(std::floor(frac * opts_.width));
    s.append(" [").append(filled, '#').append(opts_.width - filled, '.').append("] ");
    s.append(std::to_string(static_cast<int>(std::floor(frac * 100.0)))).append("%");
  }
  s.append(" ").append(fmt("%.1f", rate)).append(" ").append(opts_.unit).append("/s");
  if (total_ > 0) {
    const double eta = rate > 0 ? static_cast<double>(total_ - done) / rate : -1.0;
    s.append(" ETA ").append(format_duration(done >= total_ ? 0.0 : eta));
  }
  return s;
}

void ProgressBar::update(int64_t done) { update_at(done, timer_.seconds()); }

void ProgressBar::advance(int64_t n) {
  const double t = timer_.seconds();
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  done_ += n;
  emit_locked(done_, t, false);
}

void ProgressBar::update_at(int64_t done, double elapsed_s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  done_ = done;
  emit_locked(done_, elapsed_s, false);
}

void ProgressBar::finish() {
  const double t = timer_.seconds();
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  emit_locked(done_, t, true);
  if (tty_) console_->close_status(status_id_, true);
  finished_ = true;
}

void ProgressBar::emit_locked(int64_t done, double elapsed_s, bool force) {
  const bool complete = total_ > 0 && done >= total_;
  if (tty_) {
    if (!force && !complete && elapsed_s - last_emit_s_ < opts_.tty_min_interval) return;
    console_->set_status(status_id_, render(done, elapsed_s));
  } else {
    const int64_t bucket =
        total_ > 0 && opts_.pct_every > 0
            ? static_cast<int64_t>(std::floor(static_cast<double>(std::min(done, total_)) /
                                              static_cast<double>(total_) / opts_.pct_every + 1e-9))
            : -1;
    const bool new_bucket = bucket > last_bucket_;
    const bool timed = elapsed_s - last_emit_s_ >= opts_.seconds_every;
    if (!force && !new_bucket && !timed) return;
    if (force && drawn_ && done == last_printed_done_) return;  // final line already printed
    console_->line(render(done, elapsed_s));
    last_bucket_ = std::max(last_bucket_, bucket);
    last_printed_done_ = done;
  }
  last_emit_s_ = elapsed_s;
  drawn_ = true;
}

std::string summary_line(const std::string& role, int64_t step, const std::map<std::string, double>& metrics,
                         const std::vector<std::string>& keys, double seconds) {
  std::string s = "[";
  s.append(role).append("] step ").append(std::to_string(step));
  for (const auto& key : keys) {
    std::string label, metric;
    if (const size_t eq = key.find('='); eq != std::string::npos) {
      label = key.substr(0, eq);
      metric = key.substr(eq + 1);
    } else {
      metric = key;
      std::string rest = key;
      size_t slash = rest.rfind('/');
      label = slash == std::string::npos ? rest : rest.substr(slash + 1);
      if ((label == "mean" || label == "max" || label == "min" || label == "std") && slash != std::string::npos) {
        rest = rest.substr(0, slash);
        slash = rest.rfind('/');
        label = slash == std::string::npos ? rest : rest.substr(slash + 1);
      }
    }
    const auto it = metrics.find(metric);
    if (it == metrics.end()) continue;
    s.append(" | ").append(label).append(" ").append(fmt("%.4g", it->second));
  }
  if (seconds >= 0) {
    if (seconds < 1.0)
      s.append(" | ").append(fmt("%.0f", seconds * 1000.0)).append(" ms");
    else
      s.append(" | ").append(fmt("%.1f", seconds)).append(" s");
  }
  return s;
}

}  // namespace trinity::monitor
