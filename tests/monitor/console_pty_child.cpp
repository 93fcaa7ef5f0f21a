// Helper process for test_console_pty: shows a progress bar on stderr (the pty of the test),
// logs while it is drawn, then finishes it. The parent checks what the terminal shows.
#include "core/log.h"
#include "monitor/progress.h"

int main() {
  trinity::monitor::ProgressOptions o;
  o.tty_min_interval = 0.0;  // draw every update
  trinity::monitor::ProgressBar bar("explore", 4, o);
  bar.update(1);
  trinity::log::info("step 1 done");
  bar.update(2);
  trinity::log::warn("a warning");
  bar.update(4);
  bar.finish();
  trinity::log::info("after the bar");
  return 0;
}
