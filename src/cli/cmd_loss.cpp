// `trinity debug loss --input IN.json --output OUT.json`: runs one algorithm (the YAML `algorithm:`
// section, as JSON) on one batch of experiences and writes the loss, advantages, d(loss)/d(current
// logprobs), d(loss)/d(entropy) and Trinity-named metrics. The whole input is one mini-batch; an
// optional "micro_batch_size" splits it (the result is the same up to float rounding, batch.h) and
// "max_response_tokens" fixes the seq-mean-token-sum-norm length, as the trainer does.
// Input and output formats: docs/algorithms.md ("Checking an algorithm").
#include <algorithm>
#include <cstdio>
#include <span>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "algorithm/algorithm.h"
#include "algorithm/minibatch.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/file.h"
#include "core/json_fields.h"
#include "core/json_limits.h"

namespace trinity::cli {

namespace {

using nlohmann::json;

std::vector<float> floats(const json& j, const std::string& where) {
  if (!j.is_array()) throw ValueError("debug loss", strcat(where, " must be an array of numbers"));
  std::vector<float> v;
  v.reserve(j.size());
  for (const auto& x : j) {
    if (!x.is_number()) throw ValueError("debug loss", strcat(where, " must contain only numbers, got ", x.dump()));
    v.push_back(x.get<float>());
  }
  return v;
}

// Per-experience optional token array, padded into out [B, T]; returns false if any experience lacks it.
bool gather(const std::vector<json>& rows, const char* key, const std::vector<int64_t>& len, int64_t T,
            std::vector<float>& out) {
  for (const auto& r : rows)
    if (!r.contains(key) || r[key].is_null()) return false;
  out.assign(rows.size() * static_cast<size_t>(T), 0.0f);
  for (size_t b = 0; b < rows.size(); ++b) {
    const auto v = floats(rows[b][key], strcat("experiences[", b, "].", key));
    if (static_cast<int64_t>(v.size()) != len[b])
      throw ShapeError("debug loss", strcat("experiences[", b, "].", key, " has ", v.size(),
                                            " values, expected ", len[b], " (one per response token)"));
    std::copy(v.begin(), v.end(), out.begin() + static_cast<long>(b * static_cast<size_t>(T)));
  }
  return true;
}

json unpad(const std::vector<float>& a, const std::vector<int64_t>& len, int64_t T) {
  json out = json::array();
  for (size_t b = 0; b < len.size(); ++b) {
    json row = json::array();
    for (int64_t t = 0; t < len[b]; ++t) row.push_back(a[b * static_cast<size_t>(T) + static_cast<size_t>(t)]);
    out.push_back(row);
  }
  return out;
}

}  // namespace

namespace {
int debug_loss(const Argv& argv);
}  // namespace

int cmd_debug_loss(const Argv& argv) {
  try {
    return debug_loss(argv);
  } catch (const nlohmann::json::exception& e) {
    // A field of the wrong JSON type (e.g. "group": 3): report it as bad input, not an internal error.
    throw ValueError("debug loss", strcat("input has a field of the wrong type: ", e.what()));
  }
}

namespace {

int debug_loss(const Argv& argv) {
  Args args("debug loss", argv, {"input", "output"});
  const std::string in_path = args.str("input"), out_path = args.str("output");
  json in;
  const std::string in_text = file::read_all(in_path);
  check_json_depth(in_text, in_path, kMaxJsonDepth, "debug loss");
  try {
    in = json::parse(in_text);
  } catch (const json::parse_error& e) {
    throw IoError("debug loss", strcat(in_path, ": not valid JSON: ", e.what()));
  }
  if (!in.is_object()) throw ValueError("debug loss", strcat(in_path, ": expected a JSON object"));
  {
    JsonFields top(in, in_path, "debug loss");
    for (const char* k : {"algorithm", "experiences", "current_logprobs", "entropy", "train_step", "seed",
                          "micro_batch_size", "max_response_tokens"})
      top.get(k);
    top.finish();  // unknown top-level key: UnknownKeyError with a did-you-mean
  }
  algo::Algorithm alg(algo::algorithm_spec_from_json(in.value("algorithm", json::object()).dump()));

  if (!in.contains("experiences") || !in["experiences"].is_array())
    throw ValueError("debug loss", strcat(in_path, ": needs \"experiences\": [...]"));
  const std::vector<json> rows(in["experiences"].begin(), in["experiences"].end());
  const int64_t B = static_cast<int64_t>(rows.size());
  if (B == 0) throw ValueError("debug loss", strcat(in_path, ": empty batch: \"experiences\" is empty"));

  // Lengths and padding.
  std::vector<int64_t> len(static_cast<size_t>(B));
  int64_t T = 0;
  for (int64_t b = 0; b < B; ++b) {
    const auto& r = rows[static_cast<size_t>(b)];
    if (!r.is_object() || !r.contains("logprobs"))
      throw ValueError("debug loss", strcat("experiences[", b, "] needs \"logprobs\" (rollout logprob per response token)"));
    len[static_cast<size_t>(b)] = static_cast<int64_t>(r["logprobs"].size());
    T = std::max(T, len[static_cast<size_t>(b)]);
  }
  if (T == 0) throw ValueError("debug loss", "every experience has zero response tokens");
  const size_t n = static_cast<size_t>(B * T);
  std::vector<float> old_lp, ref_lp, mask, teacher, values, token_rewards, given_adv, given_ret;
  gather(rows, "logprobs", len, T, old_lp);
  const bool has_ref = gather(rows, "ref_logprobs", len, T, ref_lp);
  // action_mask: per experience; absent = every response token is trained (single-turn).
  mask.assign(n, 0.0f);
  for (int64_t b = 0; b < B; ++b) {
    const auto& r = rows[static_cast<size_t>(b)];
    const int64_t L = len[static_cast<size_t>(b)];
    if (!r.contains("action_mask") || r["action_mask"].is_null()) {
      for (int64_t t = 0; t < L; ++t) mask[static_cast<size_t>(b * T + t)] = 1.0f;
      continue;
    }
    const auto v = floats(r["action_mask"], strcat("experiences[", b, "].action_mask"));
    if (static_cast<int64_t>(v.size()) != L)
      throw ShapeError("debug loss", strcat("experiences[", b, "].action_mask has ", v.size(), " values, expected ", L,
                                            " (one per response token)"));
    for (int64_t t = 0; t < L; ++t) {
      if (v[static_cast<size_t>(t)] != 0.0f && v[static_cast<size_t>(t)] != 1.0f)
        throw ValueError("debug loss", strcat("experiences[", b, "].action_mask must hold 0 or 1, got ", v[static_cast<size_t>(t)]));
      mask[static_cast<size_t>(b * T + t)] = v[static_cast<size_t>(t)];
    }
  }
  const bool has_teacher = gather(rows, "teacher_logprobs", len, T, teacher);
  const bool has_values = gather(rows, "values", len, T, values);
  const bool has_token_rewards = gather(rows, "token_rewards", len, T, token_rewards);
  const bool has_adv = gather(rows, "advantages", len, T, given_adv);
  const bool has_ret = gather(rows, "returns", len, T, given_ret);
  std::vector<float> nec;  // clipv's per-token N (trinity's trainer cannot produce it; this tool takes it)
  const bool has_nec = gather(rows, "nec", len, T, nec);

  std::vector<float> rewards(static_cast<size_t>(B), 0.0f);
  std::vector<std::string> group(static_cast<size_t>(B)), run, anchor;
  std::vector<int64_t> run_step;
  std::vector<uint8_t> is_expert(static_cast<size_t>(B), 0);
  std::vector<float> reward_baseline;  // ReMax: info.reward_baseline in the trainer
  bool any_run = false, any_step = false, any_anchor = false, any_baseline = false;
  std::optional<int64_t> train_step;
  if (in.contains("train_step")) train_step = in["train_step"].get<int64_t>();
  for (int64_t b = 0; b < B; ++b) {
    const auto& r = rows[static_cast<size_t>(b)];
    const size_t i = static_cast<size_t>(b);
    if (r.contains("reward") && !r["reward"].is_null()) {
      if (!r["reward"].is_number()) throw ValueError("debug loss", strcat("experiences[", b, "].reward must be a number"));
      rewards[i] = r["reward"].get<float>();
    } else if (!has_adv && alg.advantage_fn()) {
      throw ValueError("debug loss", strcat("experiences[", b, "] has no \"reward\" (pending rewards cannot be trained)"));
    }
    group[i] = r.contains("group") ? r["group"].get<std::string>() : strcat("#", b);
    any_run |= r.contains("run"), any_step |= r.contains("run_step"), any_anchor |= r.contains("anchor");
    any_baseline |= r.contains("reward_baseline");
    is_expert[i] = r.value("is_expert", false) ? 1 : 0;
    if (r.contains("step")) {
      const int64_t s = r["step"].get<int64_t>();
      if (train_step && *train_step != s)
        throw ValueError("debug loss", strcat("experiences[", b, "].step = ", s, " differs from the batch's train step ",
                                              *train_step, " (one batch is one train step)"));
      train_step = s;
    }
    if (r.contains("chosen") && r["chosen"].get<bool>() != (b % 2 == 0))
      throw ValueError("debug loss", strcat("experiences[", b, "]: DPO pairs are (chosen, rejected) rows in order; row ", b,
                                            " must have \"chosen\": ", b % 2 == 0 ? "true" : "false"));
  }
  if (any_run) {
    run.resize(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b)
      run[static_cast<size_t>(b)] = rows[static_cast<size_t>(b)].value("run", strcat("#", b));
  }
  if (any_step) {
    run_step.resize(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) run_step[static_cast<size_t>(b)] = rows[static_cast<size_t>(b)].value("run_step", int64_t{0});
  }
  if (any_anchor) {
    anchor.resize(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) {
      const auto& r = rows[static_cast<size_t>(b)];
      if (!r.contains("anchor")) throw ValueError("debug loss", strcat("experiences[", b, "] lacks \"anchor\" (GiGPO state key)"));
      anchor[static_cast<size_t>(b)] = r["anchor"].is_string() ? r["anchor"].get<std::string>() : r["anchor"].dump();
    }
  }

  if (any_baseline) {
    reward_baseline.resize(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) {
      const auto& r = rows[static_cast<size_t>(b)];
      if (!r.contains("reward_baseline") || !r["reward_baseline"].is_number())
        throw ValueError("debug loss", strcat("experiences[", b, "] lacks a numeric \"reward_baseline\" (ReMax)"));
      reward_baseline[static_cast<size_t>(b)] = r["reward_baseline"].get<float>();
    }
  }

  // Current-policy logprobs and entropy.
  std::vector<json> cur_rows, ent_rows;
  if (!in.contains("current_logprobs") || !in["current_logprobs"].is_array() ||
      static_cast<int64_t>(in["current_logprobs"].size()) != B)
    throw ShapeError("debug loss", strcat("\"current_logprobs\" must be an array with one row per experience (", B, ")"));
  for (int64_t b = 0; b < B; ++b) cur_rows.push_back(json{{"v", in["current_logprobs"][static_cast<size_t>(b)]}});
  std::vector<float> cur, ent;
  gather(cur_rows, "v", len, T, cur);
  bool has_ent = false;
  if (in.contains("entropy") && !in["entropy"].is_null()) {
    if (!in["entropy"].is_array() || static_cast<int64_t>(in["entropy"].size()) != B)
      throw ShapeError("debug loss", strcat("\"entropy\" must be an array with one row per experience (", B, ")"));
    for (int64_t b = 0; b < B; ++b) ent_rows.push_back(json{{"v", in["entropy"][static_cast<size_t>(b)]}});
    has_ent = gather(ent_rows, "v", len, T, ent);
  }

  // 1. Advantages.
  algo::AdvOutput adv;
  json out = json::object();
  if (has_adv) {
    adv.advantages = given_adv;
    adv.returns = has_ret ? given_ret : given_adv;
    adv.keep.assign(static_cast<size_t>(B), 1);
    for (int64_t b = 0; b < B; ++b) adv.rows.push_back(b);
  } else {
    algo::AdvInput ai;
    ai.B = B, ai.T = T;
    ai.rewards = rewards, ai.mask = mask, ai.lengths = len, ai.old_logprob = old_lp, ai.group = group;
    if (has_ref) ai.ref_logprob = ref_lp;
    if (has_teacher) ai.teacher_logprob = teacher;
    if (has_values) ai.values = values;
    if (has_token_rewards) ai.token_rewards = token_rewards;
    if (any_run) ai.run = run;
    if (any_step) ai.run_step = run_step;
    if (any_anchor) ai.anchor = anchor;
    if (any_baseline) ai.reward_baseline = reward_baseline;
    if (has_ent) ai.entropy = ent;  // the trainer's actor entropy at advantage time (clipb, clipv)
    if (has_nec) ai.nec = nec;
    Rng rng(in.value("seed", uint64_t{0}));
    adv = alg.compute_advantages(ai, rng);
    if (!adv.mask.empty()) mask = adv.mask;  // clipb / clipv dropped tokens: the loss trains the rest
  }

  // 2. The loss over the output rows (dropped rows leave, duplicated rows appear twice).
  const int64_t Bo = static_cast<int64_t>(adv.rows.size());
  std::vector<float> dlogprob(n, 0.0f), dentropy(n, 0.0f);
  algo::Metrics metrics = adv.metrics;
  double loss = 0;
  if (Bo > 0) {
    const size_t no = static_cast<size_t>(Bo * T);
    std::vector<float> c(no), o(no), rf(has_ref ? no : 0), a(no), e(has_ent ? no : 0), m(no);
    std::vector<uint8_t> ex(static_cast<size_t>(Bo));
    for (int64_t k = 0; k < Bo; ++k) {
      const size_t src = static_cast<size_t>(adv.rows[static_cast<size_t>(k)]);
      ex[static_cast<size_t>(k)] = is_expert[src];
      for (int64_t t = 0; t < T; ++t) {
        const size_t d = static_cast<size_t>(k * T + t), s = src * static_cast<size_t>(T) + static_cast<size_t>(t);
        c[d] = cur[s], o[d] = old_lp[s], a[d] = adv.advantages[s], m[d] = mask[s];
        if (has_ref) rf[d] = ref_lp[s];
        if (has_ent) e[d] = ent[s];
      }
    }
    int64_t mbs = in.value("micro_batch_size", Bo);
    if (mbs <= 0) throw ValueError("debug loss", strcat("micro_batch_size must be >= 1, got ", mbs));
    const int64_t max_len = in.value("max_response_tokens", int64_t{0});
    if (max_len < 0) throw ValueError("debug loss", strcat("max_response_tokens must be >= 0, got ", max_len));
    auto slice = [&](const std::vector<float>& v, int64_t b0, int64_t nb) {
      return v.empty() ? std::span<const float>() : std::span<const float>(v).subspan(static_cast<size_t>(b0 * T), static_cast<size_t>(nb * T));
    };
    // The trainer's mini-batch glue (algo::minibatch_actor_loss) over fixed-size micro-batches.
    auto micro = [&](int64_t b0, int64_t b1, bool) {
      const int64_t nb = b1 - b0;
      algo::TokenBatch mb;
      mb.B = nb, mb.T = T;
      mb.logprob = slice(c, b0, nb), mb.old_logprob = slice(o, b0, nb), mb.ref_logprob = slice(rf, b0, nb);
      mb.advantages = slice(a, b0, nb), mb.entropy = slice(e, b0, nb), mb.mask = slice(m, b0, nb);
      mb.is_expert = std::span<const uint8_t>(ex).subspan(static_cast<size_t>(b0), static_cast<size_t>(nb));
      mb.train_step = train_step.value_or(0);
      return mb;
    };
    auto accumulate = [&](int64_t b0, int64_t b1, const algo::LossOutput& lo) {
      for (int64_t k = b0; k < b1; ++k) {
        const size_t src = static_cast<size_t>(adv.rows[static_cast<size_t>(k)]);
        for (int64_t t = 0; t < T; ++t) {
          const size_t s = src * static_cast<size_t>(T) + static_cast<size_t>(t), d = static_cast<size_t>((k - b0) * T + t);
          dlogprob[s] += lo.dlogprob[d], dentropy[s] += lo.dentropy[d];
        }
      }
    };
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (int64_t b0 = 0; b0 < Bo; b0 += mbs) ranges.emplace_back(b0, std::min(Bo, b0 + mbs));
    const algo::MiniBatchLoss ml =
        algo::minibatch_actor_loss(alg, ranges, static_cast<double>(max_len), micro, accumulate);
    loss = ml.loss;
    metrics.merge(ml.metrics);
  }

  out["loss"] = loss;
  out["advantages"] = unpad(adv.advantages, len, T);
  out["returns"] = unpad(adv.returns, len, T);
  out["action_mask"] = unpad(mask, len, T);  // as trained (clipb / clipv edit it)
  out["dlogprob"] = unpad(dlogprob, len, T);
  out["dentropy"] = unpad(dentropy, len, T);
  json kept = json::array();
  for (auto k : adv.keep) kept.push_back(k != 0);
  out["kept"] = kept;
  out["rows"] = adv.rows;
  json mj = json::object();
  for (const auto& [k, e] : metrics.entries()) mj[k] = e.value;
  out["metrics"] = mj;
  json info = json::object();
  info["algorithm_type"] = alg.type();
  info["repeat_times"] = alg.repeat_times();
  info["use_reference"] = alg.use_reference();
  info["use_critic"] = alg.use_critic();
  info["advantage_fn"] = alg.advantage_fn_name();
  info["policy_loss_fn"] = alg.policy_loss_fn_name();
  info["loss_agg_mode"] = algo::agg_mode_name(alg.loss_agg_mode());
  out["algorithm"] = info;
  file::write_atomic(out_path, out.dump(1) + "\n");
  return 0;
}

}  // namespace

}  // namespace trinity::cli
