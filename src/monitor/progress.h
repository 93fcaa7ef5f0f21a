// Console progress: a ProgressBar ("explore  12/40 [###.......] 30% 1.2 step/s ETA 00:23") that
// on a terminal is a status line of a console::Console (redrawn in place; log lines printed while
// it shows clear it first and redraw it after, several bars share the line) and otherwise prints
// one plain line each time progress crosses another `pct_every` (5 %) or `seconds_every` (10 s)
// passes, so CI logs stay readable;
// and summary_line(), the one-line per-step summary
// ("[trainer] step 3 | pg_loss -0.012 | reward 0.41 | grad_norm 0.9 | 1.3 s").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/console.h"
#include "core/timer.h"

namespace trinity::monitor {

struct ProgressOptions {
  std::string unit = "step";
  int width = 10;               // bar cells
  double pct_every = 0.05;      // non-TTY: print when progress crosses another 5 %
  double seconds_every = 10.0;  // non-TTY: ... or this long has passed since the last line
  double tty_min_interval = 0.1;  // TTY: redraw at most this often (the final draw always happens)
};

class ProgressBar {
 public:
  using Sink = std::function<void(std::string_view)>;
  // Writes to console::Console::err() (stderr); TTY mode when stderr is a terminal.
  ProgressBar(std::string label, int64_t total, ProgressOptions opts = {});
  // Writes to `console` (which must outlive the bar); TTY mode when it is a terminal.
  ProgressBar(std::string label, int64_t total, console::Console& console, ProgressOptions opts = {});
  // Writes to `sink` through a console of its own in the given mode (tests).
  ProgressBar(std::string label, int64_t total, bool tty, Sink sink, ProgressOptions opts = {});
  ~ProgressBar();  // on a TTY leaves the last draw on screen as a line

  void update(int64_t done);  // absolute progress; thread-safe
  void advance(int64_t n = 1);
  void update_at(int64_t done, double elapsed_s);  // explicit clock (tests)
  void finish();  // final draw, newline on a TTY; idempotent

  // The bar text for `done` after `elapsed_s` seconds (no '\r' or newline).
  std::string render(int64_t done, double elapsed_s) const;

 private:
  void emit_locked(int64_t done, double elapsed_s, bool force);

  std::unique_ptr<console::Console> own_console_;  // the Sink constructor's
  console::Console* console_;
  std::string label_;
  int64_t total_;
  bool tty_;
  int status_id_ = -1;
  ProgressOptions opts_;
  Timer timer_;
  std::mutex mu_;
  int64_t done_ = 0;
  bool finished_ = false;
  bool drawn_ = false;
  double last_emit_s_ = -1e300;
  int64_t last_bucket_ = -1;
  int64_t last_printed_done_ = -1;
};

// "MM:SS", or "H:MM:SS" from one hour on; "--:--" for a negative or non-finite value.
std::string format_duration(double seconds);

// "[role] step N | label value | ... | 1.3 s". Each key is "metric" (label = its last path part, or
// the part before a trailing mean/max/min/std: critic/score/mean -> score) or "label=metric".
// Keys missing from metrics are skipped; seconds < 0 leaves the time out.
std::string summary_line(const std::string& role, int64_t step, const std::map<std::string, double>& metrics,
                         const std::vector<std::string>& keys, double seconds = -1.0);

}  // namespace trinity::monitor
