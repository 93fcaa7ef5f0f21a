// Errors: typed exceptions for bad user input (message starts with "[component]" and names the
// offending key/path/value), and TRINITY_ASSERT for programmer errors (always on, with file:line).
// Expected outcomes (end of data, timeout, queue full) are return values, never exceptions.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace trinity {

// Base of every error trinity throws on bad input. what() is "[component] message".
class Error : public std::runtime_error {
 public:
  Error(const std::string& component, const std::string& message)
      : std::runtime_error("[" + component + "] " + message), component_(component) {}
  const std::string& component() const { return component_; }

 private:
  std::string component_;
};

class ConfigError : public Error { using Error::Error; };  // bad config key / value
class IoError : public Error { using Error::Error; };      // file missing, truncated, corrupt
class ShapeError : public Error { using Error::Error; };   // tensor shape mismatch in user data
class ValueError : public Error { using Error::Error; };   // out-of-range or malformed value
class UnsupportedError : public Error { using Error::Error; };  // feature not built / not supported

namespace detail {
template <typename... Args>
std::string cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}
[[noreturn]] void assert_fail(const char* cond, const char* file, int line, const std::string& msg);
}  // namespace detail

// Concatenates any streamable arguments into a string: strcat("n=", n, " bad").
template <typename... Args>
std::string strcat(Args&&... args) {
  return detail::cat(std::forward<Args>(args)...);
}

}  // namespace trinity

// Programmer error: never reached by user input. Aborts with file:line and the message.
#define TRINITY_ASSERT(cond, ...)                                                    \
  do {                                                                               \
    if (!(cond)) [[unlikely]]                                                        \
      ::trinity::detail::assert_fail(#cond, __FILE__, __LINE__,                      \
                                     ::trinity::detail::cat("" __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)
