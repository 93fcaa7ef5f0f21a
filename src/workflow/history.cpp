// experiences_from_history: chains of token-consistent calls -> experiences (see history.h).
#include "workflow/history.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace trinity::workflow {

namespace {

struct Chain {
  std::vector<const tok::RecordedCall*> calls;
  std::vector<int32_t> seq;  // last call's prompt + sampled ids
};

bool starts_with(const std::vector<int32_t>& a, const std::vector<int32_t>& prefix) {
  return a.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), a.begin());
}

// Where `prompt` leaves the chain's sequence, for the debug note.
std::string divergence(const tok::RecordedCall& c, const Chain& ch) {
  const auto& a = c.prompt_ids;
  const auto& b = ch.seq;
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  if (i == a.size())
    return strcat("call ", c.id, ": its prompt (", a.size(),
                  " ids) is shorter than the previous call's prompt + response (", b.size(), " ids) of ",
                  ch.calls.back()->id, " (history truncated or rewritten)");
  return strcat("call ", c.id, ": its prompt differs from the previous call's prompt + response (", ch.calls.back()->id,
                ") at id ", i, " of ", b.size(), " (", a[i], " != ", b[i], "; history rewritten or re-tokenized)");
}

buffer::Experience to_experience(const Chain& ch, int64_t step) {
  buffer::Experience e;
  const tok::RecordedCall& first = *ch.calls.front();
  const tok::RecordedCall& last = *ch.calls.back();
  e.tokens = ch.seq;
  e.prompt_length = static_cast<int64_t>(first.prompt_ids.size());
  const size_t R = e.tokens.size() - first.prompt_ids.size();
  e.logprobs.assign(R, 0.0f);
  e.action_mask.assign(R, 0);
  e.model_version = first.model_version;
  nlohmann::json ids = nlohmann::json::array(), versions = nlohmann::json::array();
  for (const auto* c : ch.calls) {
    const size_t off = c->prompt_ids.size() - first.prompt_ids.size();
    for (size_t j = 0; j < c->ids.size(); ++j) {
      e.action_mask[off + j] = 1;
      e.logprobs[off + j] = j < c->logprobs.size() ? c->logprobs[j] : 0.0f;
    }
    e.model_version = std::min(e.model_version, c->model_version);
    ids.push_back(c->id);
    versions.push_back(c->model_version);
  }
  e.eid.step = step;
  if (last.finish_reason == "length") e.truncate_status = buffer::TruncateStatus::kResponseTruncated;
  e.info = nlohmann::json{{"calls", ch.calls.size()}, {"call_ids", ids}, {"versions", versions}}.dump();
  return e;
}

}  // namespace

HistoryExperiences experiences_from_history(const std::vector<tok::RecordedCall>& calls) {
  std::vector<const tok::RecordedCall*> order;
  for (const auto& c : calls)
    if (!c.ids.empty()) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->start < b->start; });
  HistoryExperiences out;
  out.calls = static_cast<int64_t>(order.size());
  std::vector<Chain> chains;
  for (const auto* c : order) {
    // Extend the longest chain this call continues.
    Chain* best = nullptr;
    for (auto& ch : chains)
      if (starts_with(c->prompt_ids, ch.seq) && (!best || ch.seq.size() > best->seq.size())) best = &ch;
    if (best) {
      best->calls.push_back(c);
      best->seq = c->prompt_ids;
      best->seq.insert(best->seq.end(), c->ids.begin(), c->ids.end());
      continue;
    }
    const bool sibling = std::any_of(chains.begin(), chains.end(),
                                     [&](const Chain& ch) { return ch.calls.front()->prompt_ids == c->prompt_ids; });
    if (!chains.empty() && !sibling) {
      ++out.inconsistent;
      out.notes.push_back(divergence(*c, chains.back()));
    }
    Chain ch;
    ch.calls.push_back(c);
    ch.seq = c->prompt_ids;
    ch.seq.insert(ch.seq.end(), c->ids.begin(), c->ids.end());
    chains.push_back(std::move(ch));
  }
  for (size_t i = 0; i < chains.size(); ++i)
    out.experiences.push_back(to_experience(chains[i], static_cast<int64_t>(i)));
  return out;
}

}  // namespace trinity::workflow
