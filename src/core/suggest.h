// "Did you mean" support, shared by every place that rejects an unknown name (config keys,
// algorithm keys, workflow names, command-line flags): Levenshtein distance and the closest
// candidate within a distance limit.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace trinity {

// Levenshtein distance (insertions, deletions, substitutions; bytes).
size_t edit_distance(const std::string& a, const std::string& b);

// The candidate nearest to `key` (the first of equally near ones) when its distance is at most
// `max_distance`; "" otherwise. max_distance < 0: max(2, key.size() / 3).
std::string closest_match(const std::string& key, const std::vector<std::string>& candidates, int max_distance = -1);

}  // namespace trinity
