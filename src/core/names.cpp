// Edit distance, did-you-mean and unknown-key errors shared by every layer (see names.h).
#include "core/names.h"

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

std::string closest_name(const std::string& key, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& c : candidates) {
    if (c == key) continue;
    const size_t d = edit_distance(key, c);
    if (d < best_d) best_d = d, best = c;
  }
  const size_t limit = std::max<size_t>(2, key.size() / 3);
  if (best.empty() || best_d > limit) return "";
  return best;
}

std::string did_you_mean_suffix(const std::string& key, const std::vector<std::string>& candidates) {
  const std::string best = closest_name(key, candidates);
  return best.empty() ? std::string() : " (did you mean '" + best + "'?)";
}

std::string join_names(const std::vector<std::string>& names) {
  if (names.empty()) return "(none)";
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

namespace {
std::string last_part(const std::string& path) {
  const size_t dot = path.find_last_of('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}
}  // namespace

std::vector<std::string> sorted_unique(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

UnknownKeyError::UnknownKeyError(const std::string& component, std::string path, std::vector<std::string> valid)
    : KeyError(Raw{}, component, path,
               strcat("unknown key '", path, "'", did_you_mean_suffix(last_part(path), valid),
                      "; valid keys here: ", join_names(sorted_unique(valid)))),
      valid_(std::move(valid)) {}

std::string UnknownKeyError::key() const {
  return last_part(path());
}

void throw_unknown_name(const std::string& component, const std::string& kind, const std::string& name,
                        const std::vector<std::string>& names) {
  throw ConfigError(component, strcat("unknown ", kind, " '", name, "'", did_you_mean_suffix(name, names),
                                      "; registered: ", join_names(sorted_unique(names))));
}

}  // namespace trinity
