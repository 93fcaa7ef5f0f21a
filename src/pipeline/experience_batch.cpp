// Experience -> padded [B, T] algorithm arrays, micro-batch ranges, row selection.
// See experience_batch.h for the row layout and the packed/padded correspondence.
#include "pipeline/experience_batch.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "core/error.h"

namespace trinity::pipeline {

namespace {

// The info fields the trainer reads: is_expert (mix / mix_chord), anchor (GiGPO's environment state,
// env_workflow's step-wise layout) and reward_baseline (ReMax: the greedy rollout's reward).
struct InfoFields {
  bool is_expert = false;
  std::optional<std::string> anchor;
  std::optional<double> reward_baseline;
};

InfoFields info_fields(const std::string& info) {
  InfoFields f;
  if (info.empty()) return f;
  const auto j = nlohmann::json::parse(info, nullptr, false);
  if (!j.is_object()) return f;
  if (const auto it = j.find("is_expert"); it != j.end())
    f.is_expert = it->is_boolean() ? it->get<bool>() : it->is_number() ? it->get<double>() != 0 : false;
  if (const auto it = j.find("anchor"); it != j.end() && !it->is_null())
    f.anchor = it->is_string() ? it->get<std::string>() : it->dump();
  if (const auto it = j.find("reward_baseline"); it != j.end() && it->is_number())
    f.reward_baseline = it->get<double>();
  return f;
}

// Copies a per-response array of row b (length R) into padded [B, T] storage, checking its length.
void put_row(std::vector<float>& dst, const std::vector<float>& src, int64_t b, int64_t T, int64_t R, const char* field,
             const buffer::Experience& e) {
  if (static_cast<int64_t>(src.size()) != R)
    throw ValueError("trainer", strcat("experience ", e.eid.uid(), ": ", field, " has ", src.size(),
                                       " values, expected the response length ", R));
  std::copy(src.begin(), src.end(), dst.begin() + b * T);
}

}  // namespace

int64_t ExperienceBatch::tokens(int64_t b0, int64_t b1) const {
  int64_t n = 0;
  for (int64_t b = b0; b < b1; ++b) n += static_cast<int64_t>(seqs[static_cast<size_t>(b)].size());
  return n;
}

std::span<const int32_t> ExperienceBatch::shared_prompt(int64_t b) const {
  const auto& s = seqs[static_cast<size_t>(b)];
  const int64_t P = std::min<int64_t>(prompt_len[static_cast<size_t>(b)], static_cast<int64_t>(s.size()));
  return std::span<const int32_t>(s.data(), static_cast<size_t>(std::max<int64_t>(0, P - 1)));
}

std::vector<float> ExperienceBatch::scatter(const std::vector<float>& vals, int64_t b0, int64_t b1) const {
  const int64_t base = resp_offset[static_cast<size_t>(b0)];
  TRINITY_ASSERT(static_cast<int64_t>(vals.size()) == resp_offset[static_cast<size_t>(b1)] - base,
                 "scatter: ", vals.size(), " values for ", resp_offset[static_cast<size_t>(b1)] - base, " tokens");
  std::vector<float> out(static_cast<size_t>((b1 - b0) * T), 0.0f);
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t o = resp_offset[static_cast<size_t>(b)] - base;
    std::copy_n(vals.begin() + o, resp_len[static_cast<size_t>(b)], out.begin() + (b - b0) * T);
  }
  return out;
}

std::vector<float> ExperienceBatch::gather(const float* padded, int64_t b0, int64_t b1) const {
  std::vector<float> out;
  out.reserve(static_cast<size_t>(resp_offset[static_cast<size_t>(b1)] - resp_offset[static_cast<size_t>(b0)]));
  for (int64_t b = b0; b < b1; ++b)
    out.insert(out.end(), padded + (b - b0) * T, padded + (b - b0) * T + resp_len[static_cast<size_t>(b)]);
  return out;
}

ExperienceBatch make_batch(const std::vector<buffer::Experience>& exps) {
  ExperienceBatch eb;
  if (exps.empty()) throw ValueError("trainer", "empty batch of experiences");
  size_t n_dpo = 0;
  for (const auto& e : exps) n_dpo += e.type() == buffer::ExperienceType::kDpo ? 1 : 0;
  if (n_dpo != 0 && n_dpo != exps.size())
    throw ValueError("trainer", strcat("batch mixes ", n_dpo, " DPO experiences with ", exps.size() - n_dpo,
                                       " others; a DPO batch must hold only chosen/rejected experiences"));
  eb.dpo = n_dpo != 0;
  // Rows: sequence, prompt length, source.
  for (size_t i = 0; i < exps.size(); ++i) {
    const auto& e = exps[i];
    const int64_t P = eb.dpo ? static_cast<int64_t>(e.tokens.size()) : e.prompt_length;
    if (P < 1 || P > static_cast<int64_t>(e.tokens.size()))
      throw ValueError("trainer", strcat("experience ", e.eid.uid(), ": prompt_length ", P, " must be in [1, ",
                                         e.tokens.size(), "] (the first response token needs a prompt token)"));
    auto add = [&](std::vector<int32_t> s) {
      eb.seqs.push_back(std::move(s));
      eb.prompt_len.push_back(P);
      eb.source.push_back(static_cast<int64_t>(i));
    };
    if (eb.dpo) {
      for (const auto* r : {&e.chosen, &e.rejected}) {
        std::vector<int32_t> s = e.tokens;
        s.insert(s.end(), r->begin(), r->end());
        add(std::move(s));
      }
    } else {
      add(e.tokens);
    }
  }
  eb.B = static_cast<int64_t>(eb.seqs.size());
  eb.resp_offset.push_back(0);
  for (int64_t b = 0; b < eb.B; ++b) {
    const int64_t R =
        static_cast<int64_t>(eb.seqs[static_cast<size_t>(b)].size()) - eb.prompt_len[static_cast<size_t>(b)];
    eb.resp_len.push_back(R);
    eb.resp_offset.push_back(eb.resp_offset.back() + R);
    eb.T = std::max(eb.T, R);
  }
  if (eb.T == 0) throw ValueError("trainer", "every experience of the batch has an empty response");
  const size_t n = static_cast<size_t>(eb.B * eb.T);
  eb.old_logprob.assign(n, 0.0f);
  eb.mask.assign(n, 0.0f);
  // Expert (SFT) rows of mix / mix_chord may lack rollout arrays; they read as zeros.
  std::vector<uint8_t> expert(exps.size());
  std::vector<std::optional<std::string>> anchor(exps.size());
  std::vector<std::optional<double>> baseline(exps.size());
  for (size_t i = 0; i < exps.size(); ++i) {
    InfoFields f = info_fields(exps[i].info);
    expert[i] = f.is_expert ? 1 : 0;
    anchor[i] = std::move(f.anchor);
    baseline[i] = f.reward_baseline;
  }
  const bool has_anchor =
      !eb.dpo && std::all_of(anchor.begin(), anchor.end(), [](const auto& a) { return a.has_value(); });
  const bool has_baseline =
      !eb.dpo && std::all_of(baseline.begin(), baseline.end(), [](const auto& a) { return a.has_value(); });
  auto all_have = [&](auto field) {
    if (eb.dpo) return false;
    bool any = false;
    for (size_t i = 0; i < exps.size(); ++i) {
      if (expert[i] && (exps[i].*field).empty()) continue;
      if ((exps[i].*field).empty()) return false;
      any = true;
    }
    return any;
  };
  auto has = [](const std::vector<float>& v) { return !v.empty(); };
  const bool has_adv = all_have(&buffer::Experience::advantages), has_ret = all_have(&buffer::Experience::returns),
             has_tr = all_have(&buffer::Experience::token_rewards),
             has_teacher = all_have(&buffer::Experience::teacher_logprobs);
  eb.has_old_logprob = all_have(&buffer::Experience::logprobs);
  if (has_adv) eb.advantages.assign(n, 0.0f);
  if (has_ret) eb.returns.assign(n, 0.0f);
  if (has_tr) eb.token_rewards.assign(n, 0.0f);
  if (has_teacher) eb.teacher_logprob.assign(n, 0.0f);
  for (int64_t b = 0; b < eb.B; ++b) {
    const auto& e = exps[static_cast<size_t>(eb.source[static_cast<size_t>(b)])];
    const int64_t R = eb.resp_len[static_cast<size_t>(b)], T = eb.T;
    if (eb.dpo) {
      std::fill_n(eb.mask.begin() + b * T, R, 1.0f);
    } else {
      if (has(e.logprobs)) put_row(eb.old_logprob, e.logprobs, b, T, R, "logprobs", e);
      if (e.action_mask.empty()) {
        std::fill_n(eb.mask.begin() + b * T, R, 1.0f);
      } else {
        if (static_cast<int64_t>(e.action_mask.size()) != R)
          throw ValueError("trainer", strcat("experience ", e.eid.uid(), ": action_mask has ", e.action_mask.size(),
                                             " values, expected the response length ", R));
        for (int64_t t = 0; t < R; ++t) eb.mask[eb.at(b, t)] = e.action_mask[static_cast<size_t>(t)] ? 1.0f : 0.0f;
      }
      if (has_adv && has(e.advantages)) put_row(eb.advantages, e.advantages, b, T, R, "advantages", e);
      if (has_ret && has(e.returns)) put_row(eb.returns, e.returns, b, T, R, "returns", e);
      if (has_tr && has(e.token_rewards)) put_row(eb.token_rewards, e.token_rewards, b, T, R, "token_rewards", e);
      if (has_teacher && has(e.teacher_logprobs))
        put_row(eb.teacher_logprob, e.teacher_logprobs, b, T, R, "teacher_logprobs", e);
    }
    eb.rewards.push_back(static_cast<float>(e.reward.value_or(0.0)));
    eb.group.push_back(e.eid.tid());
    eb.run.push_back(e.eid.rid());
    eb.run_step.push_back(e.eid.step);
    eb.lengths.push_back(R);
    eb.model_version.push_back(e.model_version);
    eb.is_expert.push_back(expert[static_cast<size_t>(eb.source[static_cast<size_t>(b)])]);
    if (has_anchor) eb.anchor.push_back(*anchor[static_cast<size_t>(eb.source[static_cast<size_t>(b)])]);
    if (has_baseline)
      eb.reward_baseline.push_back(
          static_cast<float>(*baseline[static_cast<size_t>(eb.source[static_cast<size_t>(b)])]));
  }
  return eb;
}

std::vector<std::pair<int64_t, int64_t>> micro_ranges(const ExperienceBatch& eb, int64_t max_tokens, int64_t max_rows,
                                                      bool pair, int64_t lo, int64_t hi, bool share_prompts) {
  std::vector<std::pair<int64_t, int64_t>> out;
  const int64_t step = pair ? 2 : 1;
  if (hi < 0) hi = eb.B;
  if (lo >= hi) return out;
  using Prompts = std::set<std::vector<int32_t>>;
  const Prompts none;
  // Tokens rows [b, e) add to a range holding `held` shared prompts (each counts once); the prompts
  // they bring go to `added`.
  auto cost = [&](int64_t b, int64_t e, const Prompts& held, Prompts& added) {
    int64_t n = eb.tokens(b, e);
    for (int64_t r = b; share_prompts && r < e; ++r) {
      const auto sp = eb.shared_prompt(r);
      if (sp.empty()) continue;
      std::vector<int32_t> key(sp.begin(), sp.end());
      if (held.count(key) || !added.insert(std::move(key)).second) n -= static_cast<int64_t>(sp.size());
    }
    return n;
  };
  int64_t b0 = lo, toks = 0;
  Prompts held;
  for (int64_t b = lo; b < hi; b += step) {
    const int64_t e = std::min(b + step, hi);
    Prompts alone_added, added;
    const int64_t alone = cost(b, e, none, alone_added);  // as the first rows of a range
    if (max_tokens > 0 && alone > max_tokens)
      throw ValueError("trainer", strcat(pair ? "DPO pair " : "sequence ", eb.group[b], "/", eb.run[b], " (step ",
                                         eb.run_step[b], ", row ", b, " of this batch) has ", alone,
                                         " tokens, more than trainer.max_token_len_per_gpu (", max_tokens,
                                         "); every sequence must fit in one micro-batch: raise "
                                         "trainer.max_token_len_per_gpu to at least ",
                                         alone, " or lower model.max_model_len"));
    const int64_t t = cost(b, e, held, added);
    const bool full = max_tokens > 0 ? (b > b0 && toks + t > max_tokens) : (max_rows > 0 && b - b0 >= max_rows);
    if (full) {
      out.emplace_back(b0, b);
      b0 = b, toks = alone, held = std::move(alone_added);
    } else {
      toks += t, held.merge(added);
    }
  }
  out.emplace_back(b0, hi);
  return out;
}

std::vector<float> select_rows(const std::vector<float>& padded, int64_t T, const std::vector<int64_t>& rows) {
  if (padded.empty()) return {};
  std::vector<float> out(rows.size() * static_cast<size_t>(T));
  for (size_t k = 0; k < rows.size(); ++k)
    std::copy_n(padded.begin() + rows[k] * T, T, out.begin() + static_cast<int64_t>(k) * T);
  return out;
}

}  // namespace trinity::pipeline
