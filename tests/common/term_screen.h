// A minimal terminal emulator for tests of what a user sees: applies '\r' (column 0), '\n' (next
// line), "\033[K" (erase to the end of the line) and overwrites characters; colour sequences
// ("\033[...m") are dropped. screen() is the resulting lines, the last one without its newline.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trinity::test {

inline std::vector<std::string> term_screen(std::string_view bytes) {
  std::vector<std::string> lines(1);
  size_t col = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    std::string& cur = lines.back();
    if (c == '\r') {
      col = 0;
    } else if (c == '\n') {
      lines.emplace_back();
      col = 0;
    } else if (c == '\033' && i + 1 < bytes.size() && bytes[i + 1] == '[') {
      size_t j = i + 2;
      while (j < bytes.size() && !(bytes[j] >= '@' && bytes[j] <= '~')) ++j;
      if (j < bytes.size() && bytes[j] == 'K' && col < cur.size()) cur.resize(col);
      i = j;  // other sequences (colours) do not move the cursor
    } else {
      if (col < cur.size())
        cur[col] = c;
      else
        cur.append(col - cur.size(), ' ').push_back(c);
      ++col;
    }
  }
  return lines;
}

}  // namespace trinity::test
