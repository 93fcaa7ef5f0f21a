// Built-in experience operators and the pipeline that runs them (operators.h).
#include "pipeline/operators.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/names.h"
#include "core/timer.h"
#include "pipeline/data_ops.h"
#include "pipeline/jsonl_command.h"
#include "pipeline/llm_score.h"
#include "pipeline/operator_util.h"

namespace trinity::pipeline {

namespace {

std::map<std::string, double> filtered(size_t before, size_t after) {
  return {{"filtered_count", static_cast<double>(before - after)}};
}

class RewardFilter : public ExperienceOperator {
 public:
  explicit RewardFilter(double threshold) : threshold_(threshold) {}
  std::map<std::string, double> process(std::vector<buffer::Experience>& exps, OperatorContext&) override {
    const size_t n = exps.size();
    std::erase_if(exps, [&](const buffer::Experience& e) { return !(e.reward && *e.reward >= threshold_); });
    return filtered(n, exps.size());
  }

 private:
  double threshold_;
};

class RewardStdFilter : public ExperienceOperator {
 public:
  explicit RewardStdFilter(double threshold) : threshold_(threshold) {}
  std::map<std::string, double> process(std::vector<buffer::Experience>& exps, OperatorContext&) override {
    std::map<std::string, std::vector<double>> groups;  // Eid::tid -> rewards
    for (const auto& e : exps) groups[e.eid.tid()].push_back(e.reward.value_or(std::nan("")));
    std::map<std::string, bool> keep;
    for (const auto& [tid, r] : groups) {
      if (r.size() < 2) {
        keep[tid] = false;
        continue;
      }
      double mean = 0, var = 0;
      for (double x : r) mean += x;
      mean /= static_cast<double>(r.size());
      for (double x : r) var += (x - mean) * (x - mean);
      const double sd = std::sqrt(var / static_cast<double>(r.size()));  // population std (numpy's default)
      keep[tid] = sd > threshold_;  // NaN (a pending reward) compares false: dropped
    }
    const size_t n = exps.size();
    std::erase_if(exps, [&](const buffer::Experience& e) { return !keep[e.eid.tid()]; });
    return filtered(n, exps.size());
  }

 private:
  double threshold_;
};

class InvalidRewardFilter : public ExperienceOperator {
 public:
  std::map<std::string, double> process(std::vector<buffer::Experience>& exps, OperatorContext&) override {
    const size_t n = exps.size();
    std::erase_if(exps, [](const buffer::Experience& e) { return !e.reward || std::isnan(*e.reward); });
    return filtered(n, exps.size());
  }
};

struct Shaping {
  std::string stats_key, op_type;
  double weight = 1.0;
};

class RewardShapingMapper : public ExperienceOperator {
 public:
  explicit RewardShapingMapper(std::vector<Shaping> s) : shaping_(std::move(s)) {}
  std::map<std::string, double> process(std::vector<buffer::Experience>& exps, OperatorContext&) override {
    std::vector<double> diff;
    for (auto& e : exps) {
      if (!e.reward) {
        diff.push_back(0.0);
        continue;
      }
      const double before = *e.reward;
      json info;
      try {
        info = e.info.empty() ? json::object() : json::parse(e.info);
      } catch (const json::exception&) {
        info = json::object();
      }
      double r = before;
      for (const auto& s : shaping_) {
        if (!info.is_object() || !info.contains(s.stats_key) || !info[s.stats_key].is_number()) continue;
        const double v = info[s.stats_key].get<double>();
        if (s.op_type == "ADD")
          r += s.weight * v;
        else if (s.op_type == "SUB")
          r -= s.weight * v;
        else if (s.op_type == "MUL")
          r *= s.weight * v;
        else if (s.weight * v != 0)  // DIV, skipped when the divisor is 0
          r /= s.weight * v;
      }
      e.reward = r;
      diff.push_back(r - before);
    }
    if (diff.empty()) return {{"reward_diff/mean", 0.0}, {"reward_diff/min", 0.0}, {"reward_diff/max", 0.0}};
    double sum = 0;
    for (double d : diff) sum += d;
    return {{"reward_diff/mean", sum / static_cast<double>(diff.size())},
            {"reward_diff/min", *std::min_element(diff.begin(), diff.end())},
            {"reward_diff/max", *std::max_element(diff.begin(), diff.end())}};
  }

 private:
  std::vector<Shaping> shaping_;
};

// A data op (data_ops.h) over each experience's response (text_key: response, the default) or prompt;
// token counts come from the experience.
class DataExperienceOp : public ExperienceOperator {
 public:
  explicit DataExperienceOp(const OperatorConfig& cfg) {
    json a = cfg.args.empty() ? json::object() : json::parse(cfg.args, nullptr, false);
    if (a.is_discarded() || !a.is_object())
      throw ConfigError("pipeline",
                        strcat("experience operator '", cfg.name, "': args must be a mapping, got ", cfg.args));
    if (a.contains("text_key")) {
      const json& k = a.at("text_key");
      if (!k.is_string() || (k.get<std::string>() != "response" && k.get<std::string>() != "prompt"))
        throw ConfigError("pipeline", strcat("experience operator '", cfg.name,
                                             "': text_key must be 'response' or 'prompt', got ", k.dump()));
      prompt_ = k.get<std::string>() == "prompt";
      a.erase("text_key");
    }
    op_ = make_data_op(cfg.name, a.dump());
  }
  std::map<std::string, double> process(std::vector<buffer::Experience>& exps, OperatorContext&) override {
    std::vector<DataRow> rows(exps.size());
    for (size_t i = 0; i < exps.size(); ++i) {
      rows[i].text = prompt_ ? exps[i].prompt_text : exps[i].response_text;
      rows[i].tokens = prompt_ ? exps[i].prompt_length : exps[i].response_length();
    }
    DataOpResult r = op_->apply(rows);
    size_t k = 0;
    for (size_t i = 0; i < exps.size(); ++i) {
      if (!(r.keep.at(i))) continue;
      if (k != i) exps[k] = std::move(exps[i]);  // never a self-move (it may empty the strings)
      ++k;
    }
    exps.resize(k);
    return r.metrics;
  }

 private:
  bool prompt_ = false;
  std::unique_ptr<DataOp> op_;
};

using Factory = std::function<std::unique_ptr<ExperienceOperator>(const OperatorConfig&)>;

const std::map<std::string, Factory>& factories() {
  static const std::map<std::string, Factory> f = {
      {"reward_filter",
       [](const OperatorConfig& c) {
         const json a = parse_args(c, {"threshold"});
         return std::make_unique<RewardFilter>(number_arg(c, a, "threshold", 0.0));
       }},
      {"reward_std_filter",
       [](const OperatorConfig& c) {
         const json a = parse_args(c, {"threshold"});
         return std::make_unique<RewardStdFilter>(number_arg(c, a, "threshold", 0.0));
       }},
      {"invalid_reward_filter",
       [](const OperatorConfig& c) {
         parse_args(c, {});
         return std::make_unique<InvalidRewardFilter>();
       }},
      {"reward_shaping_mapper",
       [](const OperatorConfig& c) {
         const json a = parse_args(c, {"reward_shaping_configs"});
         std::vector<Shaping> s;
         if (a.contains("reward_shaping_configs") && !a["reward_shaping_configs"].is_null()) {
           const json& l = a["reward_shaping_configs"];
           if (!l.is_array())
             throw ConfigError("pipeline",
                               "experience operator 'reward_shaping_mapper': reward_shaping_configs must "
                               "be a list of {stats_key, op_type, weight}");
           for (size_t i = 0; i < l.size(); ++i) {
             const std::string at = strcat("reward_shaping_mapper: reward_shaping_configs[", i, "]");
             if (!l[i].is_object()) throw ConfigError("pipeline", strcat(at, " must be a mapping, got ", l[i].dump()));
             Shaping x;
             for (const auto& [k, v] : l[i].items()) {
               if (k == "stats_key" && v.is_string())
                 x.stats_key = v.get<std::string>();
               else if (k == "op_type" && v.is_string())
                 x.op_type = v.get<std::string>();
               else if (k == "weight" && v.is_number())
                 x.weight = v.get<double>();
               else
                 throw ConfigError("pipeline", strcat(at, ": bad key '", k, "' = ", v.dump(),
                                                      " (expected stats_key: text, op_type: ADD|SUB|MUL|DIV, "
                                                      "weight: number)"));
             }
             if (x.op_type.empty()) x.op_type = "ADD";
             if (x.op_type != "ADD" && x.op_type != "SUB" && x.op_type != "MUL" && x.op_type != "DIV")
               throw ConfigError("pipeline", strcat(at, ": op_type '", x.op_type, "' is not ADD, SUB, MUL or DIV"));
             if (x.stats_key.empty()) throw ConfigError("pipeline", strcat(at, ": stats_key is required"));
             s.push_back(x);
           }
         }
         return std::make_unique<RewardShapingMapper>(std::move(s));
       }},
      {"pass_rate_calculator", make_pass_rate_calculator},
      {"command", make_command_operator},
  };
  return f;
}

}  // namespace

std::vector<std::string> operator_names() {
  std::vector<std::string> n = data_op_names();
  n.push_back("llm_score");
  for (const auto& [k, f] : factories()) n.push_back(k);
  std::sort(n.begin(), n.end());
  return n;
}

std::unique_ptr<ExperienceOperator> make_operator(const OperatorConfig& cfg, const JudgeFactory& judge) {
  if (cfg.name == "llm_score") {
    JudgeFactory j = judge ? judge : [](const OperatorConfig& c) -> Ask {
      throw UnsupportedError("pipeline", strcat("operator '", c.name, "' has no judge model here"));
    };
    return make_llm_score_experience_op(cfg, j);
  }
  const auto it = factories().find(cfg.name);
  if (it == factories().end() && is_data_op(cfg.name)) return std::make_unique<DataExperienceOp>(cfg);
  if (it == factories().end()) {
    std::string hint;
    if (cfg.name == "data_juicer")
      hint = " (Data-Juicer runs as an external program here: use the 'command' operator with dj-process)";
    throw ConfigError("pipeline", strcat("unknown experience operator '", cfg.name, "'", hint,
                                         did_you_mean_suffix(cfg.name, operator_names()),
                                         "; built in: ", join_names(operator_names())));
  }
  return it->second(cfg);
}

ExperiencePipeline::ExperiencePipeline(const std::vector<OperatorConfig>& ops, const JudgeFactory& judge) {
  for (const auto& o : ops) ops_.emplace_back(o.name, make_operator(o, judge));
}

std::map<std::string, double> ExperiencePipeline::run(std::vector<buffer::Experience>& exps, OperatorContext& ctx) {
  std::map<std::string, double> m;
  for (size_t i = 0; i < ops_.size(); ++i) {
    Timer t;
    for (const auto& [k, v] : ops_[i].second->process(exps, ctx)) m["experience_pipeline/" + k] += v;
    m[strcat("time/experience_pipeline/operator/", i, "_", ops_[i].first)] = t.seconds();
  }
  return m;
}

}  // namespace trinity::pipeline
