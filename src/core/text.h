// Whitespace trimming with one rule for the whole code base: Python's str.strip() on ASCII text
// (space, \t, \n, \r, \f, \v), independent of the C locale. trim_view returns a view into its
// argument (keep the argument alive); trim returns a copy.
#pragma once

#include <string>
#include <string_view>

namespace trinity {

constexpr bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

constexpr std::string_view trim_view(std::string_view s) {
  while (!s.empty() && is_ascii_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ascii_space(s.back())) s.remove_suffix(1);
  return s;
}

inline std::string trim(std::string_view s) {
  return std::string(trim_view(s));
}

}  // namespace trinity
