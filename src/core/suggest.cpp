// edit_distance / closest_match (see suggest.h): two-row dynamic programming, O(|a|·|b|).
#include "core/suggest.h"

#include <algorithm>
#include <cstdint>

namespace trinity {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_match(const std::string& key, const std::vector<std::string>& candidates, int max_distance) {
  const size_t limit = max_distance >= 0 ? static_cast<size_t>(max_distance) : std::max<size_t>(2, key.size() / 3);
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(key, c);
    if (d < best_d) best_d = d, best = c;
  }
  return best_d <= limit ? best : "";
}

}  // namespace trinity
