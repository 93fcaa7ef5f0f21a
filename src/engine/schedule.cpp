// Engine scheduling arithmetic (see schedule.h).
#include "engine/schedule.h"

#include <algorithm>

namespace trinity::engine {

namespace {
int64_t pages_of(int64_t tokens, int64_t ps) {
  return (tokens + ps - 1) / ps;
}
}  // namespace

int64_t pages_needed(int64_t prompt_len, int64_t n, int64_t max_new, int64_t page_size) {
  return pages_of(prompt_len, page_size) + n * (pages_of(max_new, page_size) + 1);
}

Admission admission(int64_t need_pages, int64_t n, const AdmissionState& s) {
  if (need_pages > s.total_pages) return Admission::kNever;
  if (s.committed_pages + need_pages > s.total_pages) return Admission::kWait;
  if (s.pending_prefill >= s.max_prefill_tokens) return Admission::kWait;
  if (s.running_samples + n > s.max_running && !s.idle) return Admission::kWait;
  return Admission::kAdmit;
}

std::vector<int64_t> plan_prefill_chunks(const std::vector<int64_t>& remaining, int64_t budget) {
  std::vector<int64_t> chunks;
  int64_t used = 0;
  for (int64_t rem : remaining) {
    const int64_t chunk = std::min(rem, budget - used);
    if (chunk <= 0) break;
    chunks.push_back(chunk);
    used += chunk;
  }
  return chunks;
}

}  // namespace trinity::engine
