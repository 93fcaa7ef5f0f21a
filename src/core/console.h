// The one owner of a terminal stream (stderr): log lines and progress bars both write through a
// Console, under one mutex, so a log line never lands glued to a bar ("explore 3/8 [#..]...[INFO]").
// On a terminal, status lines (progress bars) stay at the bottom: a log line first clears them
// ("\r\033[K"), prints itself, then redraws them. Off a terminal there are no status lines: callers
// print plain lines. Colour follows https://no-color.org: only on a terminal, never when NO_COLOR is
// set to a non-empty value (TERM=dumb also turns it off).
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace trinity::console {

// The colour decision, pure (tests): terminal, NO_COLOR unset or empty, TERM not "dumb".
bool color_enabled(bool is_terminal, const char* no_color_env, const char* term_env);
// isatty(fd) and the environment (NO_COLOR, TERM).
bool use_color(int fd);

// "\033[<sgr>m" + text + "\033[0m" when `color`, else text.
std::string paint(std::string_view text, const char* sgr, bool color);

class Console {
 public:
  using Writer = std::function<void(std::string_view)>;
  using Columns = std::function<int()>;  // terminal width, <= 0 when unknown

  // `terminal`: status lines are drawn in place; `color`: ANSI colour allowed.
  Console(bool terminal, bool color, Writer writer, Columns columns = {});

  // The process-wide console on stderr (terminal = isatty(2), colour = use_color(2)).
  static Console& err();

  bool terminal() const { return terminal_; }
  bool color() const { return color_; }

  // Writes one line (`text` without its newline). Thread-safe; on a terminal clears and then
  // redraws the status lines around it.
  void line(std::string_view text);

  // Status lines (terminal only; no-ops otherwise). A status is drawn at the bottom, several at
  // once side by side ("explore ... | train ..."), cut to the terminal width so '\r' can redraw.
  int open_status();
  void set_status(int id, std::string text);
  // Removes the status; `keep`: its last text stays on screen as an ordinary line.
  void close_status(int id, bool keep);

 private:
  std::string status_text_locked() const;
  void write_locked(std::string s);

  bool terminal_, color_;
  Writer writer_;
  Columns columns_;
  std::mutex mu_;
  std::map<int, std::string> status_;  // id -> text, drawn in id order
  int next_id_ = 0;
  bool shown_ = false;  // a status line is on screen (the cursor sits at its end)
};

}  // namespace trinity::console
