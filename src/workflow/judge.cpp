// Judge helpers: rating / score-list parsing by hand (no std::regex: judgements can be long), the
// info["judge"] record, and the policy's single-turn rollout shared by the judge workflows.
#include "workflow/judge.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <exception>
#include <nlohmann/json.hpp>
#include <thread>

#include "tokenizer/tool_call_parse.h"
#include "workflow/simple_workflow.h"

#include "core/text.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;

// A finite number filling all of `s` (after trimming); Python-style "+1" and "1." accepted.
std::optional<double> to_number(std::string_view s) {
  s = trim_view(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// One line of the judgement for a failure message.
std::string excerpt(std::string_view text) {
  std::string s(text.substr(0, 160));
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return "'" + s + (text.size() > 160 ? "...'" : "'");
}

// The object's numeric `key`: a rating, or (reason, detail) when present but bad; nullopt result and
// empty reason when the object has no such key.
ParsedRating rating_of(const json& obj, const std::string& key, double lo, double hi) {
  ParsedRating r;
  if (!obj.is_object() || !obj.contains(key)) return r;
  const json& v = obj[key];
  if (!v.is_number()) {
    r.reason = "unparsable";
    r.detail = strcat("\"", key, "\" is not a number: ", v.dump());
    return r;
  }
  const double x = v.get<double>();
  if (!(x >= lo && x <= hi)) {
    r.reason = "out_of_range";
    r.detail = strcat("\"", key, "\" ", v.dump(), " is outside [", lo, ", ", hi, "]");
    return r;
  }
  r.rating = x;
  return r;
}

std::optional<json> parse_object(std::string_view s) {
  json j = json::parse(s.begin(), s.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

// Balanced {...} spans in order of their opening brace (strings respected), at most `limit`.
std::vector<std::string_view> brace_objects(std::string_view t, size_t limit) {
  std::vector<std::string_view> out;
  for (size_t start = t.find('{'); start != std::string_view::npos && out.size() < limit;
       start = t.find('{', start + 1)) {
    const size_t end = tok::json_object_end(t.substr(start));
    if (end != std::string_view::npos) out.push_back(t.substr(start, end));
  }
  return out;
}

// `key` then optional quote, spaces, ':' or '=', spaces, optional quote, a number.
ParsedRating rating_from_text(std::string_view t, const std::string& key, double lo, double hi) {
  std::string lower(t);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string k = key;
  std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return std::tolower(c); });
  // The last mention wins: a judge that reasons in prose states its final rating at the end.
  for (size_t at = lower.rfind(k); at != std::string::npos; at = at ? lower.rfind(k, at - 1) : std::string::npos) {
    size_t i = at + k.size();
    auto skip = [&](auto pred) {
      while (i < t.size() && pred(t[i])) ++i;
    };
    skip([](char c) { return c == '"' || c == '\'' || c == '*' || c == ' ' || c == '\t'; });
    if (i >= t.size() || (t[i] != ':' && t[i] != '=')) continue;
    ++i;
    skip([](char c) { return c == ' ' || c == '\t' || c == '"' || c == '\'' || c == '*'; });
    size_t j = i;
    while (j < t.size() &&
           (std::isdigit(static_cast<unsigned char>(t[j])) || t[j] == '.' || t[j] == '-' || t[j] == '+'))
      ++j;
    while (j > i && t[j - 1] == '.') --j;  // "rating: 7." ends a sentence
    const auto v = to_number(t.substr(i, j - i));
    if (!v) continue;
    ParsedRating r;
    if (!(*v >= lo && *v <= hi)) {
      r.reason = "out_of_range";
      r.detail = strcat(key, " ", *v, " is outside [", lo, ", ", hi, "]");
      return r;
    }
    r.rating = *v;
    return r;
  }
  return {};
}

}  // namespace

void add_judge_record(buffer::Experience& e, const JudgeRecord& r) {
  json info = json::parse(e.info.empty() ? "{}" : e.info, nullptr, false);
  if (!info.is_object()) info = json::object();
  json rec = {{"judge", r.judge}};
  rec["prompt"] = json::parse(r.prompt, nullptr, false);
  if (rec["prompt"].is_discarded()) rec["prompt"] = r.prompt;
  rec["raw"] = r.raw;
  rec["score"] = r.score ? json(*r.score) : json(nullptr);
  if (!r.scores.empty()) rec["scores"] = r.scores;
  if (!r.error.empty()) rec["error"] = r.error;
  if (!info.contains("judge") || !info["judge"].is_array()) info["judge"] = json::array();
  info["judge"].push_back(std::move(rec));
  e.info = info.dump(-1, ' ', false, json::error_handler_t::replace);  // judgements may cut UTF-8
}

ParsedRating parse_rating(std::string_view text, double lo, double hi, const std::string& key) {
  ParsedRating first_bad;  // the first present-but-bad rating, reported when nothing better parses
  auto consider = [&](const ParsedRating& r) {
    if (r.rating) return true;
    if (!r.reason.empty() && first_bad.reason.empty()) first_bad = r;
    return false;
  };
  // 1. A ``` block (upstream's format: ```json {...} ```).
  size_t open = text.find("```json");
  size_t body = open == std::string_view::npos ? std::string_view::npos : open + 7;
  if (open == std::string_view::npos && (open = text.find("```")) != std::string_view::npos) body = open + 3;
  if (body != std::string_view::npos) {
    const size_t close = text.find("```", body);
    if (close != std::string_view::npos) {
      const auto obj = parse_object(trim_view(text.substr(body, close - body)));
      if (obj) {
        const ParsedRating r = rating_of(*obj, key, lo, hi);
        if (consider(r)) return r;
      }
    }
  }
  // 2. Bare JSON objects anywhere in the text.
  for (std::string_view span : brace_objects(text, 64)) {
    const auto obj = parse_object(span);
    if (!obj) continue;
    const ParsedRating r = rating_of(*obj, key, lo, hi);
    if (consider(r)) return r;
  }
  // 3. "rating: 7" prose.
  const ParsedRating r = rating_from_text(text, key, lo, hi);
  if (consider(r)) return r;
  if (!first_bad.reason.empty()) {
    first_bad.detail += strcat(" in ", excerpt(text));
    return first_bad;
  }
  ParsedRating none;
  none.reason = "unparsable";
  none.detail = strcat("no \"", key, "\" found (expected ```json {\"", key, "\": N}```) in ", excerpt(text));
  return none;
}

ParsedScores parse_score_list(std::string_view text, size_t n) {
  ParsedScores out;
  const size_t a = text.rfind('['), b = text.rfind(']');
  if (a == std::string_view::npos || b == std::string_view::npos || a > b) {
    out.reason = "unparsable";
    out.detail = strcat("no final [s1, ..., s", n, "] list in ",
                        excerpt(text.substr(text.size() > 160 ? text.size() - 160 : 0)));
    return out;
  }
  const std::string_view inner = text.substr(a + 1, b - a - 1);
  std::vector<double> v;
  size_t pos = 0;
  while (pos <= inner.size()) {
    size_t comma = inner.find(',', pos);
    if (comma == std::string_view::npos) comma = inner.size();
    const std::string_view item = trim_view(inner.substr(pos, comma - pos));
    const bool last = comma == inner.size();
    if (item.empty() && last && (!v.empty() || trim_view(inner).empty())) break;  // "[a, b,]" or "[]"
    const auto x = to_number(item);
    if (!x) {
      out.reason = "unparsable";
      out.detail = strcat("list item '", std::string(item.substr(0, 40)), "' is not a number in [",
                          std::string(inner.substr(0, 120)), "]");
      return out;
    }
    v.push_back(std::clamp(*x, 0.0, 1.0));
    pos = comma + 1;
  }
  if (v.size() != n) {
    out.reason = "length_mismatch";
    out.detail = strcat("the judge scored ", v.size(), " solutions, expected ", n, ": [",
                        std::string(inner.substr(0, 120)), "]");
    return out;
  }
  out.scores = std::move(v);
  return out;
}

std::string judge_messages(const std::string& system, const std::string& user) {
  return json::array({{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", user}}})
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

PolicyRollout single_turn_rollout(const buffer::Task& task, const std::string& system_prompt, RunContext& ctx) {
  TRINITY_ASSERT(ctx.model != nullptr, "single_turn_rollout without a model");
  ModelClient& model = *ctx.model;
  PolicyRollout r;
  const GenOptions opt = gen_options_for(task, std::max<int64_t>(1, ctx.repeat_times), ctx.rng);
  if (!task.messages.empty()) {
    r.messages = task.messages;
  } else {
    json m = json::array();
    if (!system_prompt.empty()) m.push_back({{"role", "system"}, {"content", system_prompt}});
    m.push_back({{"role", "user"}, {"content", task.task_desc}});
    r.messages = m.dump();
  }
  if (task.reply_prefix.empty()) {
    r.samples = model.chat(r.messages, opt, task.tools);
  } else {
    const std::string text =
        model.render_chat_template(r.messages, true, task.tools, opt.enable_thinking) + task.reply_prefix;
    r.samples = model.generate(text, opt);
  }
  for (size_t i = 0; i < r.samples.size(); ++i) {
    buffer::Experience e = experience_from_sample(r.samples[i], model, ctx.run_id_base + static_cast<int64_t>(i));
    json m = json::parse(r.messages);
    m.push_back({{"role", "assistant"}, {"content", task.reply_prefix + r.samples[i].text}});
    e.messages = m.dump();
    if (!task.tools.empty()) e.tools = task.tools;
    r.exps.push_back(std::move(e));
  }
  return r;
}

ModelClient& auxiliary_judge(const RunContext& ctx, const std::string& workflow) {
  if (ctx.auxiliary_models.empty() || ctx.auxiliary_models[0] == nullptr)
    throw JudgeError("no_judge", strcat(workflow,
                                        " scores with a judge model: set explorer.auxiliary_models "
                                        "(the first one judges)"));
  return *ctx.auxiliary_models[0];
}

std::string judge_chat(ModelClient& judge, const std::string& messages, GenOptions opt) {
  opt.n = 1;
  const std::vector<Sample> s = judge.chat(messages, opt);
  if (s.empty()) throw JudgeError("unparsable", "the judge returned no sample");
  return s[0].text;
}

void for_each_parallel(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 1) return fn(0);
  std::vector<char> cancelled(n, 0);
  std::vector<std::exception_ptr> eptr(n);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (size_t i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      try {
        fn(i);
      } catch (const CancelledError&) {
        cancelled[i] = 1;
        eptr[i] = std::current_exception();
      } catch (...) {
        eptr[i] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < n; ++i)
    if (cancelled[i]) std::rethrow_exception(eptr[i]);
  for (size_t i = 0; i < n; ++i)
    if (eptr[i]) std::rethrow_exception(eptr[i]);
}

bool judge_failure_fails(const std::string& workflow, const std::string& value) {
  if (value == "fail") return true;
  if (value == "zero") return false;
  throw ConfigError(
      "workflow", strcat(workflow, ": workflow_args.judge_failure must be \"fail\" or \"zero\", got \"", value, "\""));
}

}  // namespace trinity::workflow
