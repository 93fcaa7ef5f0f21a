// Console (see console.h). Every write is one writer call made under the mutex, so the bytes of a
// log line and a bar redraw never interleave, whatever threads they come from.
#include "core/console.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace trinity::console {

namespace {

constexpr const char* kClear = "\r\033[K";  // to the line's start, erase to its end

void write_stderr(std::string_view s) {
  std::fwrite(s.data(), 1, s.size(), stderr);
  std::fflush(stderr);
}

int stderr_columns() {
  winsize ws{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) != 0) return 0;
  return ws.ws_col;
}

// The first `n` bytes of `s`, not cutting a UTF-8 sequence in two.
std::string cut(std::string s, size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  s.resize(n);
  return s;
}

}  // namespace

bool color_enabled(bool is_terminal, const char* no_color_env, const char* term_env) {
  if (!is_terminal) return false;
  if (no_color_env && no_color_env[0] != '\0') return false;
  if (term_env && std::strcmp(term_env, "dumb") == 0) return false;
  return true;
}

bool use_color(int fd) {
  return color_enabled(::isatty(fd) != 0, std::getenv("NO_COLOR"), std::getenv("TERM"));
}

std::string paint(std::string_view text, const char* sgr, bool color) {
  if (!color) return std::string(text);
  std::string s = "\033[";
  s.append(sgr).append("m").append(text).append("\033[0m");
  return s;
}

Console::Console(bool terminal, bool color, Writer writer, Columns columns)
    : terminal_(terminal), color_(color), writer_(std::move(writer)), columns_(std::move(columns)) {}

Console& Console::err() {
  // Never destroyed: threads may still log while static destructors run at exit.
  alignas(Console) static unsigned char storage[sizeof(Console)];
  static Console* c =
      new (storage) Console(::isatty(STDERR_FILENO) != 0, use_color(STDERR_FILENO), write_stderr, stderr_columns);
  return *c;
}

std::string Console::status_text_locked() const {
  std::string s;
  for (const auto& [id, text] : status_) {
    if (text.empty()) continue;
    if (!s.empty()) s += "  |  ";
    s += text;
  }
  const int cols = columns_ ? columns_() : 0;
  // One column short of the width: a line that fills it exactly wraps on some terminals.
  if (cols > 1) s = cut(std::move(s), static_cast<size_t>(cols - 1));
  return s;
}

void Console::write_locked(std::string s) {
  if (!s.empty()) writer_(s);
}

void Console::line(std::string_view text) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string s;
  if (terminal_ && shown_) s = kClear;
  s.append(text).append("\n");
  if (terminal_ && shown_) s += status_text_locked();
  write_locked(std::move(s));
}

int Console::open_status() {
  std::lock_guard<std::mutex> lock(mu_);
  const int id = next_id_++;
  status_[id] = "";
  return id;
}

void Console::set_status(int id, std::string text) {
  std::lock_guard<std::mutex> lock(mu_);
  status_[id] = std::move(text);
  if (!terminal_) return;
  const std::string st = status_text_locked();
  if (st.empty() && !shown_) return;
  write_locked(kClear + st);
  shown_ = !st.empty();
}

void Console::close_status(int id, bool keep) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = status_.find(id);
  if (it == status_.end()) return;
  const std::string text = std::move(it->second);
  status_.erase(it);
  if (!terminal_) return;
  std::string s = shown_ ? kClear : "";
  if (keep && !text.empty()) s.append(text).append("\n");
  const std::string rest = status_text_locked();
  s += rest;
  shown_ = !rest.empty();
  write_locked(std::move(s));
}

}  // namespace trinity::console
