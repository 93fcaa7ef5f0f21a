// llm_score: judge-model scores for experiences and task rows (see llm_score.h).
#include "pipeline/llm_score.h"

#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <regex>
#include <thread>

#include "core/log.h"
#include "pipeline/operator_util.h"

namespace trinity::pipeline {

namespace {

const char* kExperienceTemplate =
    "Rate the quality of the answer to the question below on a scale from 0 to 10 (0: wrong or useless, "
    "10: correct, complete and clear). Reply with the number only.\n\nQuestion:\n{prompt}\n\nAnswer:\n{response}";
const char* kTaskTemplate =
    "Rate the quality of the following task on a scale from 0 to 10 (0: unclear or unsolvable, 10: clear, "
    "well posed and useful for training). Reply with the number only.\n\n{text}";

// Variables {name} in a template.
std::vector<std::string> template_vars(const std::string& t) {
  std::vector<std::string> v;
  static const std::regex re(R"(\{([A-Za-z_][A-Za-z0-9_.\-]*)\})");
  for (auto it = std::sregex_iterator(t.begin(), t.end(), re); it != std::sregex_iterator(); ++it)
    v.push_back((*it)[1].str());
  return v;
}

std::string render(const std::string& t, const std::map<std::string, std::string>& vars) {
  std::string out;
  size_t i = 0;
  while (i < t.size()) {
    if (t[i] == '{') {
      const size_t j = t.find('}', i);
      if (j != std::string::npos)
        if (auto it = vars.find(t.substr(i + 1, j - i - 1)); it != vars.end()) {
          out += it->second;
          i = j + 1;
          continue;
        }
    }
    out += t[i++];
  }
  return out;
}

class Scorer {
 public:
  Scorer(const OperatorConfig& cfg, AskFactory factory, const char* default_template,
         const std::vector<std::string>& extra_args)
      : cfg_(cfg), factory_(std::move(factory)) {
    std::vector<std::string> allowed = {"template",  "system_prompt", "field",       "score_range", "min_score",
                                        "max_score", "drop_unparsed", "concurrency", "max_retries"};
    allowed.insert(allowed.end(), extra_args.begin(), extra_args.end());
    const auto& judge = llm_judge_arg_names();
    allowed.insert(allowed.end(), judge.begin(), judge.end());
    const json a = parse_args(cfg, allowed);
    const std::string at = strcat("operator '", cfg.name, "': ");
    auto str = [&](const char* k, std::string& out) {
      if (!a.contains(k)) return;
      if (!a.at(k).is_string()) throw ConfigError("pipeline", strcat(at, k, " must be text, got ", a.at(k).dump()));
      out = a.at(k).get<std::string>();
    };
    template_ = default_template;
    str("template", template_);
    str("system_prompt", system_);
    str("field", field_);
    if (field_.empty()) throw ConfigError("pipeline", at + "field must not be empty");
    if (a.contains("score_range")) {
      const json& r = a.at("score_range");
      if (!r.is_array() || r.size() != 2 || !r[0].is_number() || !r[1].is_number() ||
          !(r[0].get<double>() < r[1].get<double>()))
        throw ConfigError("pipeline", strcat(at, "score_range must be [low, high] with low < high, got ", r.dump()));
      lo_ = r[0].get<double>(), hi_ = r[1].get<double>();
    }
    min_ = number_arg(cfg, a, "min_score", -std::numeric_limits<double>::infinity());
    max_ = number_arg(cfg, a, "max_score", std::numeric_limits<double>::infinity());
    filters_ = a.contains("min_score") || a.contains("max_score");
    if (a.contains("drop_unparsed")) {
      if (!a.at("drop_unparsed").is_boolean())
        throw ConfigError("pipeline",
                          strcat(at, "drop_unparsed must be true or false, got ", a.at("drop_unparsed").dump()));
      drop_unparsed_ = a.at("drop_unparsed").get<bool>();
    }
    concurrency_ = static_cast<int64_t>(number_arg(cfg, a, "concurrency", 8));
    retries_ = static_cast<int64_t>(number_arg(cfg, a, "max_retries", 2));
    if (concurrency_ < 1 || retries_ < 0)
      throw ConfigError("pipeline", strcat(at, "concurrency must be >= 1 and max_retries >= 0"));
  }
  const std::string& field() const { return field_; }
  const std::string& tmpl() const { return template_; }
  bool keeps(const std::optional<double>& s) const {
    if (!s) return !drop_unparsed_;
    return !filters_ || (*s >= min_ && *s <= max_);
  }

  // Scores in [0, 1] per row (nullopt: no parsable score); errors counts rows whose requests failed.
  std::vector<std::optional<double>> score(const std::vector<std::map<std::string, std::string>>& vars, int64_t& errors,
                                           int64_t& unparsed) {
    if (!ask_) ask_ = factory_(cfg_);
    std::vector<std::optional<double>> out(vars.size());
    std::atomic<size_t> next{0};
    std::atomic<int64_t> err{0}, bad{0};
    std::mutex log_mu;
    auto work = [&] {
      for (size_t i; (i = next++) < vars.size();) {
        json msgs = json::array();
        if (!system_.empty()) msgs.push_back({{"role", "system"}, {"content", system_}});
        msgs.push_back({{"role", "user"}, {"content", render(template_, vars[i])}});
        const std::string m = msgs.dump(-1, ' ', false, json::error_handler_t::replace);
        std::string last_error;
        bool requested = false;
        for (int64_t k = 0; k <= retries_ && !out[i]; ++k) {
          try {
            const std::string reply = ask_(m);
            requested = true;
            if (auto s = parse_score(reply))
              out[i] = (std::clamp(*s, lo_, hi_) - lo_) / (hi_ - lo_);
            else
              last_error = "no score in the reply: " + reply.substr(0, 120);
          } catch (const std::exception& e) {
            last_error = e.what();
          }
        }
        if (!out[i]) {
          requested ? ++bad : ++err;
          std::lock_guard<std::mutex> l(log_mu);
          log::warn("llm_score: row ", i, ": ", last_error);
        }
      }
    };
    std::vector<std::thread> th;
    const size_t n = std::min<size_t>(static_cast<size_t>(concurrency_), vars.size());
    for (size_t t = 0; t < n; ++t) th.emplace_back(work);
    for (auto& t : th) t.join();
    errors = err, unparsed = bad;
    return out;
  }

 private:
  OperatorConfig cfg_;
  AskFactory factory_;
  Ask ask_;
  std::string template_, system_, field_ = "llm_quality_score";
  double lo_ = 0, hi_ = 10, min_ = 0, max_ = 0;
  bool filters_ = false, drop_unparsed_ = false;
  int64_t concurrency_ = 8, retries_ = 2;
};

std::map<std::string, double> metrics(const std::vector<std::optional<double>>& s, size_t before, size_t after,
                                      int64_t errors, int64_t unparsed) {
  double sum = 0;
  int64_t n = 0;
  for (const auto& x : s)
    if (x) sum += *x, ++n;
  std::map<std::string, double> m = {{"filtered_count", static_cast<double>(before - after)},
                                     {"unparsed_count", static_cast<double>(unparsed)},
                                     {"error_count", static_cast<double>(errors)}};
  if (n) m["mean_score"] = sum / static_cast<double>(n);
  return m;
}

class LlmScoreExperienceOp : public ExperienceOperator {
 public:
  LlmScoreExperienceOp(const OperatorConfig& cfg, AskFactory ask) : s_(cfg, std::move(ask), kExperienceTemplate, {}) {
    for (const auto& v : template_vars(s_.tmpl()))
      if (v != "prompt" && v != "response" && v != "reward")
        throw ConfigError("pipeline", strcat("operator 'llm_score': template variable {", v,
                                             "} is not one of {prompt}, {response}, {reward}"));
  }
  std::map<std::string, double> process(std::vector<buffer::Experience>& exps, OperatorContext&) override {
    std::vector<std::map<std::string, std::string>> vars;
    for (const auto& e : exps)
      vars.push_back({{"prompt", e.prompt_text},
                      {"response", e.response_text},
                      {"reward", e.reward ? json(*e.reward).dump() : "null"}});
    int64_t errors = 0, unparsed = 0;
    const auto sc = s_.score(vars, errors, unparsed);
    const size_t before = exps.size();
    size_t k = 0;
    for (size_t i = 0; i < exps.size(); ++i) {
      if (sc[i]) {
        json info = exps[i].info.empty() ? json::object() : json::parse(exps[i].info, nullptr, false);
        if (!info.is_object()) info = json::object();
        info[s_.field()] = *sc[i];
        exps[i].info = info.dump();
      }
      if (!(s_.keeps(sc[i]))) continue;
      if (k != i) exps[k] = std::move(exps[i]);  // never a self-move (it may empty the strings)
      ++k;
    }
    exps.resize(k);
    return metrics(sc, before, k, errors, unparsed);
  }

 private:
  Scorer s_;
};

class LlmScoreTaskOp : public TaskOperator {
 public:
  LlmScoreTaskOp(const OperatorConfig& cfg, AskFactory ask, std::vector<std::string> keys)
      : s_(cfg, std::move(ask), kTaskTemplate, {"text_keys"}), keys_(std::move(keys)) {
    const json a = json::parse(cfg.args.empty() ? "{}" : cfg.args);
    if (a.contains("text_keys")) {
      keys_.clear();
      for (const auto& x : a.at("text_keys").is_array() ? a.at("text_keys") : json::array({a.at("text_keys")})) {
        if (!x.is_string())
          throw ConfigError("pipeline",
                            strcat("operator 'llm_score': text_keys must list column names, got ", x.dump()));
        keys_.push_back(x.get<std::string>());
      }
    }
  }
  std::map<std::string, double> process(std::vector<std::string>& rows) override {
    std::vector<json> js;
    std::vector<std::map<std::string, std::string>> vars;
    for (size_t i = 0; i < rows.size(); ++i) {
      js.push_back(json::parse(rows[i]));
      std::map<std::string, std::string> v;
      std::string text;
      for (const auto& [k, x] : js.back().items()) v[k] = x.is_string() ? x.get<std::string>() : x.dump();
      for (const auto& k : keys_)
        if (v.count(k)) text += (text.empty() ? "" : "\n") + v[k];
      v["text"] = text;
      for (const auto& name : template_vars(s_.tmpl()))
        if (!v.count(name))
          throw ValueError("pipeline", strcat("operator 'llm_score': task row ", i, " has no column '", name,
                                              "' for the template's {", name, "}"));
      vars.push_back(std::move(v));
    }
    int64_t errors = 0, unparsed = 0;
    const auto sc = s_.score(vars, errors, unparsed);
    std::vector<std::string> out;
    for (size_t i = 0; i < js.size(); ++i) {
      if (sc[i]) {
        js[i][s_.field()] = *sc[i];
        if (!js[i].contains("__dj__stats__") || !js[i]["__dj__stats__"].is_object())
          js[i]["__dj__stats__"] = json::object();
        js[i]["__dj__stats__"][s_.field()] = *sc[i];
      }
      if (s_.keeps(sc[i])) out.push_back(js[i].dump(-1, ' ', false, json::error_handler_t::replace));
    }
    const size_t before = rows.size();
    rows = std::move(out);
    return metrics(sc, before, rows.size(), errors, unparsed);
  }

 private:
  Scorer s_;
  std::vector<std::string> keys_;
};

}  // namespace

std::optional<double> parse_score(const std::string& reply) {
  // A JSON object with "score" anywhere in the reply.
  for (size_t p = reply.find('{'); p != std::string::npos; p = reply.find('{', p + 1)) {
    const size_t q = reply.find('}', p);
    if (q == std::string::npos) break;
    const json j = json::parse(reply.substr(p, q - p + 1), nullptr, false);
    if (j.is_object() && j.contains("score")) {
      const json& s = j.at("score");
      if (s.is_number()) return s.get<double>();
      if (s.is_string()) {
        try {
          return std::stod(s.get<std::string>());
        } catch (const std::exception&) {
        }
      }
    }
  }
  static const std::regex boxed(R"(\\boxed\{\s*(-?\d+(?:\.\d+)?))");
  static const std::regex labelled(R"((?:score|rating)\s*[:=]?\s*(-?\d+(?:\.\d+)?))", std::regex::icase);
  static const std::regex fraction(R"((-?\d+(?:\.\d+)?)\s*/\s*\d+(?:\.\d+)?)");
  static const std::regex number(R"(-?\d+(?:\.\d+)?)");
  std::smatch m;
  for (const std::regex* re : {&boxed, &labelled, &fraction})
    if (std::regex_search(reply, m, *re)) return std::stod(m[1].str());
  std::optional<double> last;
  for (auto it = std::sregex_iterator(reply.begin(), reply.end(), number); it != std::sregex_iterator(); ++it)
    last = std::stod(it->str());
  return last;
}

const std::vector<std::string>& llm_judge_arg_names() {
  static const std::vector<std::string> n = {"api_url",         "model",       "api_key_env", "timeout",
                                             "auxiliary_model", "temperature", "max_tokens"};
  return n;
}

std::unique_ptr<ExperienceOperator> make_llm_score_experience_op(const OperatorConfig& cfg, AskFactory ask) {
  return std::make_unique<LlmScoreExperienceOp>(cfg, std::move(ask));
}

std::unique_ptr<TaskOperator> make_llm_score_task_op(const OperatorConfig& cfg, AskFactory ask,
                                                     std::vector<std::string> default_keys) {
  return std::make_unique<LlmScoreTaskOp>(cfg, std::move(ask), std::move(default_keys));
}

}  // namespace trinity::pipeline
