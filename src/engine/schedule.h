// Scheduling arithmetic of the generation engine's step (engine.cpp), as pure functions so each
// rule is tested alone: how many KV pages an admitted request commits, whether a waiting request
// is admitted now, later or never, and how a step's prefill budget is split into prompt chunks.
// Chunking changes only which step a prompt row runs in, never its values: the engine's kernels are
// batch invariant (tensor/packed_linear.h), so a row's logits do not depend on its step-mates.
#pragma once

#include <cstdint>
#include <vector>

namespace trinity::engine {

// Pages a request commits at admission: its prompt, and for each of n samples max_new tokens plus
// one page (a sample's fork of the prompt's last, partial page).
int64_t pages_needed(int64_t prompt_len, int64_t n, int64_t max_new, int64_t page_size);

enum class Admission {
  kAdmit,  // reserve now
  kWait,   // a budget is full this step (KV pages, pending prefill, running samples): stop admitting
  kNever,  // needs more pages than the whole cache: fail the request
};

struct AdmissionState {
  int64_t total_pages = 0, committed_pages = 0;
  int64_t pending_prefill = 0, max_prefill_tokens = 0;  // prompt tokens admitted, not yet prefilled
  int64_t running_samples = 0, max_running = 0;
  bool idle = false;  // nothing running or prefilling (a request with n > max_running still runs)
};

Admission admission(int64_t need_pages, int64_t n, const AdmissionState& s);

// Prompt tokens each prefilling request (in admission order, `remaining` tokens left each) runs this
// step within `budget` tokens: earlier requests first; the list stops at the first that gets none.
std::vector<int64_t> plan_prefill_chunks(const std::vector<int64_t>& remaining, int64_t budget);

}  // namespace trinity::engine
