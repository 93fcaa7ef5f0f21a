// Reward registry and the built-in reward functions (trinity-rft.md §5.5). Each factory checks
// its args JSON up front: unknown keys and wrong types are ConfigErrors naming the key.
#include "workflow/rewards/reward_fn.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "core/error.h"
#include "core/json_fields.h"
#include "core/json_limits.h"
#include "core/registry.h"
#include "workflow/builtins.h"
#include "workflow/rewards/countdown.h"
#include "workflow/rewards/math_checker.h"

namespace trinity::workflow {
namespace {

using json = nlohmann::json;

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// reward_fn_args, read with core/json_fields.h: every key outside `allowed` is an UnknownKeyError
// (did-you-mean, valid keys); get<T>() fails loudly on a wrong type.
class Args {
 public:
  Args(const std::string& fn, const std::string& text, const std::vector<std::string>& allowed)
      : path_(fn + ".reward_fn_args") {
    if (!text.empty()) {
      check_json_depth(text, path_, kMaxJsonDepth, "reward");
      try {
        j_ = json::parse(text);
      } catch (const json::exception& e) {
        throw ConfigError("reward", strcat(path_, " is not valid JSON: ", e.what()));
      }
      if (j_.is_null()) j_ = json::object();
    }
    JsonFields f(j_, path_, "reward");
    for (const auto& k : allowed) f.get(k);
    f.finish();
  }
  template <typename T>
  T get(const std::string& key, T def) const {
    JsonFields f(j_, path_, "reward");
    if constexpr (std::is_same_v<T, bool>)
      f.boolean(key, def);
    else if constexpr (std::is_same_v<T, double>)
      f.f64(key, def);
    else
      f.i64(key, def);
    return def;
  }
  bool has(const std::string& key) const { return j_.contains(key) && !j_[key].is_null(); }

 private:
  std::string path_;
  json j_ = json::object();
};

using Registry = NamedRegistry<RewardFactory>;

void register_builtins(Registry& r);

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry("reward", "reward_fn");
    register_builtins(*reg);
    return reg;
  }();
  return *r;
}

// DAPO's "Answer: ..." extraction over the last 300 characters (case-insensitive).
std::optional<std::string> dapo_answer(std::string_view response) {
  if (response.size() > 300) response = response.substr(response.size() - 300);
  std::string lower(response);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  std::optional<std::string> out;
  size_t pos = 0;
  while ((pos = lower.find("answer", pos)) != std::string::npos) {
    size_t p = pos + 6;
    while (p < lower.size() && is_ws(lower[p]) && lower[p] != '\n') ++p;
    if (p < lower.size() && lower[p] == ':') {
      ++p;
      while (p < lower.size() && is_ws(lower[p]) && lower[p] != '\n') ++p;
      const size_t e = lower.find('\n', p);
      std::string v(response.substr(p, e == std::string::npos ? std::string::npos : e - p));
      if (!v.empty()) out = v;
    }
    pos += 6;
  }
  return out;
}

void register_builtins(Registry& r) {
  r.add("math_reward", [](const std::string& a) -> RewardFn {
    Args args("math_reward", a, {});
    return [](const RewardInput& in) {
      return RewardComponents{{"accuracy", math::verify(in.response, in.truth) ? 1.0 : 0.0},
                              {"format_score", matches_think_answer_format(in.response) ? 0.1 : -0.1}};
    };
  });
  r.add("accuracy_reward", [](const std::string& a) -> RewardFn {
    Args args("accuracy_reward", a, {});
    return [](const RewardInput& in) {
      return RewardComponents{{"accuracy", math::verify(in.response, in.truth) ? 1.0 : 0.0}};
    };
  });
  r.add("format_reward", [](const std::string& a) -> RewardFn {
    Args args("format_reward", a, {});
    return [](const RewardInput& in) {
      return RewardComponents{{"format_score", matches_strict_think_answer_format(in.response) ? 0.1 : -0.1}};
    };
  });
  r.add("math_boxed_reward", [](const std::string& a) -> RewardFn {
    Args args("math_boxed_reward", a, {"with_think", "have_think_pattern", "format_score_coef", "use_base"});
    const bool with_think = args.get<bool>("with_think", args.get<bool>("have_think_pattern", false));
    const double coef = args.get<double>("format_score_coef", 0.1);
    return [with_think, coef](const RewardInput& in) {
      const auto boxed = math::last_boxed(in.response);
      const bool ok = boxed && math::equivalent(*boxed, math::extract_gold(in.truth));
      const double fmt = with_think && !valid_think_pattern(in.response) ? -coef : 0.0;
      return RewardComponents{{"accuracy", ok ? 1.0 : 0.0}, {"format_score", fmt}};
    };
  });
  r.add("countdown_reward", [](const std::string& a) -> RewardFn {
    Args args("countdown_reward", a, {"format_score", "score"});
    const double fmt = args.get<double>("format_score", 0.1), full = args.get<double>("score", 1.0);
    return [fmt, full](const RewardInput& in) {
      json t;
      check_json_depth(in.truth, "countdown_reward: truth", kMaxJsonDepth, "reward");
      try {
        t = json::parse(in.truth);
      } catch (const json::exception&) {
        throw ValueError("reward", strcat("countdown_reward: truth must be JSON {\"target\", \"numbers\"}, got '",
                                          std::string(in.truth.substr(0, 200)), "'"));
      }
      if (!t.is_object() || !t.contains("target") || !t.contains("numbers") || !t["numbers"].is_array() ||
          !t["target"].is_number())
        throw ValueError("reward", strcat("countdown_reward: truth needs a numeric 'target' and a 'numbers' list, got ",
                                          t.dump().substr(0, 200)));
      std::vector<long long> nums;
      for (const auto& n : t["numbers"]) {
        if (!n.is_number_integer())
          throw ValueError("reward", strcat("countdown_reward: numbers must be integers, got ", n.dump()));
        nums.push_back(n.get<long long>());
      }
      return RewardComponents{{"score", countdown::score(in.response, t["target"].get<double>(), nums, fmt, full)}};
    };
  });
  r.add("math_dapo_reward", [](const std::string& a) -> RewardFn {
    Args args("math_dapo_reward", a,
              {"enable_overlong_penalty", "penalty_factor", "max_response_length", "cache_length"});
    const bool overlong = args.get<bool>("enable_overlong_penalty", false);
    const double factor = args.get<double>("penalty_factor", 1.0);
    const int64_t max_len = args.get<int64_t>("max_response_length", 0);
    const int64_t cache = args.get<int64_t>("cache_length", 0);
    if (overlong && (max_len <= 0 || cache <= 0 || cache > max_len))
      throw ConfigError("reward", strcat("math_dapo_reward: enable_overlong_penalty needs max_response_length > 0 and "
                                         "0 < cache_length <= max_response_length, got ",
                                         max_len, " and ", cache));
    return [=](const RewardInput& in) {
      const auto pred = dapo_answer(in.response);
      const bool ok = pred && math::equivalent(*pred, math::extract_gold(in.truth));
      double penalty = 0.0;
      if (overlong) {
        const int64_t expected = max_len - cache;
        const int64_t l = in.response_tokens;
        if (l > max_len) penalty = -factor;
        else if (l > expected) penalty = static_cast<double>(expected - l) / static_cast<double>(cache) * factor;
      }
      return RewardComponents{{"accuracy", ok ? 1.0 : -1.0}, {"format_score", penalty}};
    };
  });
}

}  // namespace

void register_reward_fn(const std::string& name, RewardFactory factory) {
  TRINITY_ASSERT(static_cast<bool>(factory), "register_reward_fn: empty factory for ", name);
  registry().add(name, std::move(factory));
}

RewardFn make_reward_fn(const std::string& name, const std::string& args_json) {
  return registry().get(name)(args_json);
}

bool has_reward_fn(const std::string& name) {
  return registry().contains(name);
}

std::vector<std::string> reward_fn_names() {
  return registry().names();
}

double sum_components(const RewardComponents& c) {
  double s = 0.0;
  for (const auto& [k, v] : c) s += v;
  return s;
}

bool matches_think_answer_format(std::string_view s) {
  // Strip trailing whitespace; the rest must end with "</answer>".
  size_t end = s.size();
  while (end > 0 && is_ws(s[end - 1])) --end;
  const std::string_view close = "</answer>";
  if (end < close.size() || s.substr(end - close.size(), close.size()) != close) return false;
  const size_t final_close = end - close.size();
  const size_t first_think = s.find("<think>");
  if (first_think == std::string::npos) return false;
  // Any "</think>" after a "<think>", followed by whitespace and "<answer>" that opens before the
  // final "</answer>".
  size_t pos = s.find("</think>", first_think + 7);
  while (pos != std::string::npos && pos < final_close) {
    size_t p = pos + 8;
    while (p < s.size() && is_ws(s[p])) ++p;
    if (s.substr(p, 8) == "<answer>" && p + 8 <= final_close) return true;
    pos = s.find("</think>", pos + 1);
  }
  return false;
}

bool matches_strict_think_answer_format(std::string_view s) {
  // ^<think>\n (.*?) \n</think>\n<answer>\n (.*?) \n</answer>$  ($ also matches before a final \n)
  if (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  const std::string_view head = "<think>\n", mid = "\n</think>\n<answer>\n", tail = "\n</answer>";
  if (s.size() < head.size() + mid.size() + tail.size()) return false;
  if (s.substr(0, head.size()) != head || s.substr(s.size() - tail.size()) != tail) return false;
  const size_t lo = head.size(), hi = s.size() - tail.size();
  const size_t m = s.find(mid, lo);
  return m != std::string::npos && m + mid.size() <= hi;
}

bool valid_think_pattern(std::string_view s) {
  auto count = [&](std::string_view t) {
    size_t n = 0, p = 0;
    while ((p = s.find(t, p)) != std::string::npos) ++n, p += t.size();
    return n;
  };
  return count("<think>") == 1 && count("</think>") == 1 && s.find("<think>") < s.find("</think>");
}

}  // namespace trinity::workflow
